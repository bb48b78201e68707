// The ledger API's base URL, as the HTTP clients (RemoteLedger, HttpLedgerStorage) take it.
import { InvalidOptionError } from "../errors.ts"

/**
 * Option `name`, the API's base URL, checked and without its trailing slashes. A URL holding credentials
 * (`https://user:secret@host/`) is refused here, and not quoted: fetch refuses it at every request with a message
 * that quotes it whole, which the clients' errors passed on (into logs, and through a tool's error to a model).
 * Read as fetch reads it: a relative one (a page's own API) against a stand-in origin. A query or fragment
 * (`?token=…`, even a bare `?`) is refused too: the clients append each route's path to this text, so the path landed
 * inside it (every request went to the base URL itself) and the errors that name the base URL quoted the secret.
 */
export function apiBaseUrl(name: string, value: unknown): string {
  let url: URL | null = null
  try {
    if (typeof value === "string") url = new URL(value, "http://h")
  } catch {
    // not a URL: refused below
  }
  if (!url || url.username || url.password || /[?#]/.test(value as string))
    throw new InvalidOptionError(
      `${name} must be the ledger API's URL as a string, without credentials, query or fragment: pass a secret as the token`,
    )
  return (value as string).replace(/\/+$/, "")
}
