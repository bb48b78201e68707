// The part of workerd's built-in `cloudflare:workers` module this package uses, declared locally so the package
// typechecks without @cloudflare/workers-types. Inside workerd the real module supplies the class.
declare module "cloudflare:workers" {
  export abstract class DurableObject<Env = unknown> {
    protected ctx: unknown
    protected env: Env
    constructor(ctx: unknown, env: Env)
  }
}
