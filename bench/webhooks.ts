// Inbound webhook throughput (part of `npm run bench`; BENCH_WEBHOOKS=0 skips it): signed WhatsApp Cloud API
// deliveries, each a text message from one of 1,000 senders, posted as fast as the server accepts them for
// BENCH_SEARCH_SECONDS * 2 seconds; then the time until the queue has stored every message. Reported: deliveries
// accepted per second (the HTTP side: check signature, store the job) and messages stored per second end to end.
import { createHmac, randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';

const SECONDS = Number(process.env.BENCH_SEARCH_SECONDS ?? 5) * 2;
const SENDERS = 1000;

export interface WebhookFigures {
  seconds: number;
  accepted: number;
  acceptedPerSecond: number;
  p50: number;
  p99: number;
  drainSeconds: number;
  storedPerSecond: number;
}

type Headers = Record<string, string>;

async function api(base: string, method: string, path: string, headers: Headers, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/** Messages stored on the channel: from the database when the bench has its URL, else through the API (slower). */
async function inboundCount(base: string, headers: Headers, channelId: string, databaseUrl?: string): Promise<number> {
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('select count(*)::int as n from messages where channel_id = $1', [channelId]);
      return rows[0]!.n;
    } finally {
      await client.end();
    }
  }
  let total = 0;
  for (let offset = 0; ; offset += 100) {
    const page = await api(base, 'GET', `/api/conversations?channelId=${channelId}&limit=100&offset=${offset}`, headers);
    for (const conversation of page.items) {
      const { messages } = await api(base, 'GET', `/api/conversations/${conversation.id}/messages?limit=200`, headers);
      total += messages.length;
    }
    if (offset + 100 >= page.total) return total;
  }
}

export async function benchWebhooks(base: string, headers: Headers, databaseUrl?: string): Promise<WebhookFigures> {
  const appSecret = randomBytes(16).toString('hex');
  const phoneNumberId = String(100_000_000_000 + Math.floor(Math.random() * 1e9));
  const channel = await api(base, 'POST', '/api/channels', headers, {
    type: 'whatsapp',
    name: 'Bench WhatsApp inbound',
    config: { phoneNumberId, businessAccountId: '102290129340398' },
    secrets: { accessToken: 'bench-token', appSecret, verifyToken: 'bench-verify' },
  });
  let n = 0;
  const delivery = () => {
    const i = n++;
    const waId = `4477009${String(i % SENDERS).padStart(5, '0')}`;
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550001111', phone_number_id: phoneNumberId },
                contacts: [{ profile: { name: `Sender ${i % SENDERS}` }, wa_id: waId }],
                messages: [
                  { from: waId, id: `wamid.bench.${i}.${randomBytes(4).toString('hex')}`, timestamp: String(Math.floor(Date.now() / 1000)), type: 'text', text: { body: `Message ${i}` } },
                ],
              },
            },
          ],
        },
      ],
    });
    return { body, signature: `sha256=${createHmac('sha256', appSecret).update(body).digest('hex')}` };
  };
  const result = await autocannon({
    url: `${base}/api/webhooks/meta/${channel.id}`,
    connections: 20,
    duration: SECONDS,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const { body, signature } = delivery();
          return { ...request, body, headers: { ...request.headers, 'content-type': 'application/json', 'x-hub-signature-256': signature } };
        },
      },
    ],
  });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`webhooks: ${result.non2xx} non-2xx, ${result.errors} errors`);
  const accepted = result['2xx'];
  const sent = performance.now();
  let stored = 0;
  for (let i = 0; i < 600; i++) {
    stored = await inboundCount(base, headers, channel.id, databaseUrl);
    if (stored >= accepted) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (stored < accepted) throw new Error(`only ${stored} of ${accepted} webhook messages stored after 10 minutes`);
  const drainSeconds = (performance.now() - sent) / 1000;
  return {
    seconds: SECONDS,
    accepted,
    acceptedPerSecond: accepted / SECONDS,
    p50: result.latency.p50,
    p99: result.latency.p99,
    drainSeconds,
    storedPerSecond: accepted / (SECONDS + drainSeconds),
  };
}

export function printWebhookFigures(f: WebhookFigures): void {
  console.log(
    `\nwebhooks: ${f.accepted} signed WhatsApp deliveries in ${f.seconds} s, 20 connections: ${f.acceptedPerSecond.toFixed(0)} accepted/s (p50 ${f.p50} ms, p99 ${f.p99} ms); queue drained ${f.drainSeconds.toFixed(1)} s after the last; ${f.storedPerSecond.toFixed(0)} messages stored/s end to end`,
  );
}
