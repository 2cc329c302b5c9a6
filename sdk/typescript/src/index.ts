// @continuum/client: the TypeScript client of Continuum's HTTP API (see the repository's
// README, "Use it from your stack"). Types are generated from the API's OpenAPI document.

export {
  Continuum,
  Listing,
  type Event,
  type EventInput,
  type ItemOf,
  type ListParams,
  type QueryParams,
  type RequestBody,
  type Result,
  type Schemas,
  type Writer,
} from "./client.js";
export { ContinuumError, type FieldError } from "./errors.js";
export { type ClientOptions, retryAfterSeconds } from "./http.js";
export type { components, paths } from "./schema.js";
