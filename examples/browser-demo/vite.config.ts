// `npm run demo:browser` serves this page on loopback; the demo imports the package's TypeScript sources directly.
import { defineConfig } from "vite"

export default defineConfig({
  root: import.meta.dirname,
  server: { host: "127.0.0.1", port: 5180 },
  build: { target: "es2022", outDir: "dist", emptyOutDir: true },
})
