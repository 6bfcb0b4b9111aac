import type { ApiClient } from './client.js';
import {
  DEEP_VALUE,
  FILES_QUERY,
  URLS_QUERY,
  ROUTES,
  acceptUrlPage,
  fileRecordSchema,
  fileRoute,
  urlDecisionRoute,
  urlPageSchema,
  type FileRecord,
  type UrlDecision,
  type UrlPage,
} from './wire.js';

/** The URL feed (GET /urls), URL decisions (PUT /urls/{url}) and file look-ups (GET /files/{digest}), over the agent's API client. */
export class UrlApi {
  constructor(readonly client: ApiClient) {}

  /** One page of the URL feed from `ts`. */
  async urlPage(ts: number, limit: number): Promise<UrlPage> {
    const r = await this.client.call(ROUTES.urls, urlPageSchema, { query: { [URLS_QUERY.ts]: ts, [URLS_QUERY.limit]: limit }, accept: acceptUrlPage });
    return r.data!;
  }

  /** A URL's decision (admin): not retried, the operator sees the failure and re-runs. */
  async decide(url: string, decision: UrlDecision): Promise<void> {
    await this.client.call(urlDecisionRoute(url), null, { method: 'PUT', body: { decision }, retry: false });
  }

  /** A file's record, or null when the platform does not know the digest (404). */
  async file(digest: string, deep: boolean): Promise<FileRecord | null> {
    const r = await this.client.call(fileRoute(digest), fileRecordSchema, {
      query: { [FILES_QUERY.deep]: deep ? DEEP_VALUE.yes : DEEP_VALUE.no },
      allowStatus: [404],
    });
    return r.status === 404 ? null : r.data!;
  }
}
