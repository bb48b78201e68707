// Test-only view of workerd's `env` export; the bindings come from wrangler.toml.
declare module "cloudflare:workers" {
  export const env: Readonly<Record<string, unknown>>
}
