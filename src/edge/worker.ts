// The Cloudflare Worker entry (wrangler.toml `main`). The ledger's HTTP app grows here; until then every route
// is a JSON 404 so the Durable Object binding can be deployed and tested on its own.
export { MyceliumLedgerObject } from "../adapters/durable-object.ts"

export default {
  async fetch(request: Request): Promise<Response> {
    const path = new URL(request.url).pathname
    return Response.json(
      { error: { code: "not_found", message: `no route for ${request.method} ${path}` } },
      { status: 404 },
    )
  },
}
