// Keys that come from outside (tool arguments, stored JSON, ids a model wrote) are defined, never assigned:
// assigning "__proto__" sets the object's prototype instead, so the key vanishes and its members are inherited.

/** Defines `key` as an own, enumerable, writable data member of `obj`, as JSON.parse would. */
export function defineOwn(obj: object, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true })
}
