// A fake Meta Graph API on 127.0.0.1 for tests and the bench: it checks the send requests the way Meta documents
// them (path, bearer token, JSON body) and answers as Meta does, errors included. Point GRAPH_API_URL at `url`.
//
//   const graph = await startFakeGraph();
//   createTestApp({ GRAPH_API_URL: graph.url });
//   graph.respondWith((req) => ({ status: 400, body: metaErrorBody(131047, 'Re-engagement message') }));
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GraphRequest {
  method: string;
  /** The path without the version prefix: `/{phone-number-id}/messages`, `/{page-id}/messages`, `/me/messages`. */
  path: string;
  /** `/v21.0` or '' */
  version: string;
  /** The node the message is sent from (phone number id, page id or `me`). */
  node: string;
  kind: 'whatsapp' | 'page' | 'unknown';
  /** The bearer token, if any. */
  token: string | undefined;
  headers: IncomingMessage['headers'];
  body: any;
  /** What does not match Meta's documented request format (the fake answers such a request with a 400). */
  problems: string[];
}

export interface GraphResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** Decides the answer to one request; `undefined` for the default (Meta's success answer, or its 400 for a malformed request). */
export type Responder = (request: GraphRequest, index: number) => GraphResponse | undefined | Promise<GraphResponse | undefined>;

export interface FakeGraph {
  /** Base URL with a version, as GRAPH_API_URL: `http://127.0.0.1:<port>/v21.0`. */
  url: string;
  requests: GraphRequest[];
  respondWith(responder: Responder | null): void;
  /** The message ids the fake has handed out, in order. */
  sentIds: string[];
  close(): Promise<void>;
}

/** Meta's error body: `{error: {message, type, code, error_subcode?, fbtrace_id}}`. */
export function metaErrorBody(code: number, message: string, options: { type?: string; subcode?: number; details?: string } = {}) {
  return {
    error: {
      message,
      type: options.type ?? 'OAuthException',
      code,
      ...(options.subcode !== undefined ? { error_subcode: options.subcode } : {}),
      ...(options.details !== undefined ? { error_data: { messaging_product: 'whatsapp', details: options.details } } : {}),
      fbtrace_id: randomBytes(8).toString('base64url'),
    },
  };
}

const PATH = /^(\/v\d+\.\d+)?\/([\w.-]+)\/messages$/;
const MESSAGING_TYPES = new Set(['RESPONSE', 'UPDATE', 'MESSAGE_TAG']);
const TAGS = new Set(['HUMAN_AGENT', 'CONFIRMED_EVENT_UPDATE', 'POST_PURCHASE_UPDATE', 'ACCOUNT_UPDATE']);

function check(request: GraphRequest, tokens: ReadonlySet<string> | undefined): void {
  const p = request.problems;
  if (request.method !== 'POST') p.push(`method ${request.method}, not POST`);
  if (!request.headers['content-type']?.startsWith('application/json')) p.push('content-type is not application/json');
  if (!request.token) p.push('no bearer token');
  else if (tokens && !tokens.has(request.token)) p.push('unknown access token');
  const body = request.body;
  if (body === null || typeof body !== 'object') {
    p.push('body is not a JSON object');
    return;
  }
  if (request.kind === 'whatsapp') {
    if (body.recipient_type !== undefined && body.recipient_type !== 'individual') p.push('recipient_type is not individual');
    if (typeof body.to !== 'string' || !/^\+?\d{6,15}$/.test(body.to)) p.push('to is not a phone number / wa_id');
    if (body.type !== 'text') p.push('type is not text');
    if (typeof body.text?.body !== 'string' || body.text.body.length === 0 || body.text.body.length > 4096) {
      p.push('text.body must be 1-4096 characters');
    }
  } else {
    if (typeof body.recipient?.id !== 'string' || body.recipient.id === '') p.push('recipient.id is missing');
    if (!MESSAGING_TYPES.has(body.messaging_type)) p.push('messaging_type must be RESPONSE, UPDATE or MESSAGE_TAG');
    if (body.messaging_type === 'MESSAGE_TAG' && !TAGS.has(body.tag)) p.push('MESSAGE_TAG needs a tag');
    if (body.messaging_type !== 'MESSAGE_TAG' && body.tag !== undefined) p.push('tag without MESSAGE_TAG');
    if (typeof body.message?.text !== 'string' || body.message.text.length === 0 || body.message.text.length > 2000) {
      p.push('message.text must be 1-2000 characters');
    }
  }
}

export async function startFakeGraph(options: { tokens?: string[] } = {}): Promise<FakeGraph> {
  const tokens = options.tokens ? new Set(options.tokens) : undefined;
  const requests: GraphRequest[] = [];
  const sentIds: string[] = [];
  let responder: Responder | null = null;

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch {
      body = raw;
    }
    const url = new URL(req.url ?? '/', 'http://graph.test');
    const match = PATH.exec(url.pathname);
    const auth = req.headers.authorization;
    const request: GraphRequest = {
      method: req.method ?? 'GET',
      path: match ? `/${match[2]}/messages` : url.pathname,
      version: match?.[1] ?? '',
      node: match?.[2] ?? '',
      kind: (body as { messaging_product?: unknown })?.messaging_product === 'whatsapp' ? 'whatsapp' : match ? 'page' : 'unknown',
      token: auth?.startsWith('Bearer ') ? auth.slice(7) : (url.searchParams.get('access_token') ?? undefined),
      headers: req.headers,
      body,
      problems: [],
    };
    if (!match) request.problems.push(`unknown path ${url.pathname}`);
    else check(request, tokens);
    const index = requests.push(request) - 1;

    const send = (answer: GraphResponse) => {
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    };
    try {
      const custom = responder ? await responder(request, index) : undefined;
      if (custom) return send(custom);
    } catch (error) {
      return send({ status: 500, body: { error: { message: String(error), type: 'FakeGraphError', code: 2 } } });
    }
    if (request.problems.some((problem) => problem.includes('token'))) {
      return send({ status: 401, body: metaErrorBody(190, 'Invalid OAuth access token - Cannot parse access token') });
    }
    if (request.problems.length > 0) {
      return send({ status: 400, body: metaErrorBody(100, `(#100) Invalid parameter: ${request.problems.join('; ')}`) });
    }
    if (request.kind === 'whatsapp') {
      const id = `wamid.${randomBytes(24).toString('base64url')}`;
      sentIds.push(id);
      const to = String(request.body.to);
      return send({
        status: 200,
        body: { messaging_product: 'whatsapp', contacts: [{ input: to, wa_id: to.replace(/^\+/, '') }], messages: [{ id }] },
      });
    }
    const id = `m_${randomBytes(24).toString('base64url')}`;
    sentIds.push(id);
    return send({ status: 200, body: { recipient_id: request.body.recipient.id, message_id: id } });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v21.0`,
    requests,
    sentIds,
    respondWith(next) {
      responder = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
