// The Meta Graph API client for outbound text messages: WhatsApp Cloud API and the Messenger Platform (Messenger
// and Instagram). Failures are classified: transient ones are retried by the job, permanent ones end the message.

/** Meta error codes that mean "try again later" (rate limits, temporary outages). */
export const TRANSIENT_META_CODES: ReadonlySet<number> = new Set([1, 2, 4, 17, 32, 613, 80007, 130429]);

const REQUEST_TIMEOUT_MS = 20_000;

export type SendTarget =
  | { kind: 'whatsapp'; phoneNumberId: string; to: string }
  | {
      kind: 'page';
      /** The page id (Messenger), or `me` (Instagram: the page token names the account). */
      node: string;
      recipientId: string;
      /** Outside the 24-hour window: sent with the HUMAN_AGENT tag (7 days). */
      humanAgentTag: boolean;
    };

export interface MetaErrorBody {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  fbtrace_id?: string;
  is_transient?: boolean;
  error_data?: { details?: string };
}

/** A failed Graph call: `transient` ones are retried; `code` is Meta's error code as a string (or `http_<status>`). */
export class GraphError extends Error {
  constructor(
    readonly transient: boolean,
    readonly code: string,
    message: string,
    readonly httpStatus?: number,
  ) {
    super(message);
    this.name = 'GraphError';
  }
}

/** Meta's error object from a response body, if it has one. */
export function metaError(body: unknown): MetaErrorBody | undefined {
  const error = (body as { error?: unknown } | null)?.error;
  return error && typeof error === 'object' ? (error as MetaErrorBody) : undefined;
}

/**
 * HTTP 429, 5xx and Meta's throttling/temporary codes are transient; any other answer (bad token, recipient not
 * reachable, outside the window...) is permanent.
 */
export function classifyGraphFailure(httpStatus: number, body: unknown): GraphError {
  const error = metaError(body);
  const code = typeof error?.code === 'number' ? error.code : undefined;
  const transient =
    httpStatus === 429 || httpStatus >= 500 || (code !== undefined && TRANSIENT_META_CODES.has(code)) || error?.is_transient === true;
  const details = error?.error_data?.details;
  const text = error?.message ?? `The Graph API answered HTTP ${httpStatus}`;
  return new GraphError(
    transient,
    code !== undefined ? String(code) : `http_${httpStatus}`,
    details && !text.includes(details) ? `${text}: ${details}` : text,
    httpStatus,
  );
}

export function requestFor(target: SendTarget, text: string): { path: string; body: Record<string, unknown> } {
  if (target.kind === 'whatsapp') {
    return {
      path: `/${encodeURIComponent(target.phoneNumberId)}/messages`,
      body: { messaging_product: 'whatsapp', recipient_type: 'individual', to: target.to, type: 'text', text: { body: text } },
    };
  }
  return {
    path: `/${encodeURIComponent(target.node)}/messages`,
    body: {
      recipient: { id: target.recipientId },
      ...(target.humanAgentTag ? { messaging_type: 'MESSAGE_TAG', tag: 'HUMAN_AGENT' } : { messaging_type: 'RESPONSE' }),
      message: { text },
    },
  };
}

/** Sends one text message; resolves to the provider's message id (wamid or mid), or throws a `GraphError`. */
export async function sendText(
  graphApiUrl: string,
  accessToken: string,
  target: SendTarget,
  text: string,
): Promise<{ providerMessageId: string | null }> {
  const { path, body } = requestFor(target, text);
  let response: Response;
  try {
    response = await fetch(`${graphApiUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new GraphError(true, 'network_error', `The Graph API could not be reached: ${reason}`);
  }
  const raw = await response.text().catch(() => '');
  let parsed: unknown;
  try {
    parsed = raw === '' ? undefined : JSON.parse(raw);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) throw classifyGraphFailure(response.status, parsed);
  const id =
    target.kind === 'whatsapp'
      ? (parsed as { messages?: Array<{ id?: unknown }> } | undefined)?.messages?.[0]?.id
      : (parsed as { message_id?: unknown } | undefined)?.message_id;
  // A 2xx without a readable id was still accepted: retrying could send it twice, so it counts as sent (status
  // callbacks cannot be matched to it).
  return { providerMessageId: typeof id === 'string' && id !== '' ? id : null };
}
