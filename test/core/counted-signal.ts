/** A real signal whose abort listeners are counted (Node warns past ten on one signal). */
export function countedSignal() {
  const aborter = new AbortController()
  const { signal } = aborter
  let listening = 0
  let most = 0
  const add = signal.addEventListener.bind(signal)
  const remove = signal.removeEventListener.bind(signal)
  Object.assign(signal, {
    addEventListener(type: string, fn: EventListener, options?: AddEventListenerOptions) {
      if (type === "abort") most = Math.max(most, ++listening)
      add(type, fn, options)
    },
    removeEventListener(type: string, fn: EventListener) {
      if (type === "abort") listening--
      remove(type, fn)
    },
  })
  return { aborter, signal, most: () => most, listening: () => listening }
}
