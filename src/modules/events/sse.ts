// A Server-Sent Events response on the raw socket: `retry: 3000`, then `event/id/data` blocks as the hub delivers
// them and a `: ping` comment every 25 s, until the client goes away or the server closes.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EventHub, HubEvent, Subscription } from './hub.js';

/** A client this far behind (unsent bytes) is cut off; EventSource reconnects and the client refetches. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

export interface StreamOptions {
  hub: EventHub;
  subscription: Omit<Subscription, 'deliver' | 'close'>;
  /** Shapes each event's data for this audience. */
  transform?: (event: HubEvent) => Record<string, unknown>;
  /**
   * Checked at every ping: false ends the stream (a signed-out session, a removed member, a deleted visitor), and
   * the client's reconnection is authenticated afresh.
   */
  stillAllowed?: () => Promise<boolean>;
}

/**
 * Takes over the reply (Fastify sends nothing more), answers 200 `text/event-stream` with the headers set so far
 * (request id, rate-limit, CORS, a refreshed cookie), and subscribes to the hub. Fails before anything is sent
 * when LISTEN cannot be opened, so the client gets an ordinary error.
 */
export async function streamEvents(request: FastifyRequest, reply: FastifyReply, options: StreamOptions): Promise<void> {
  await options.hub.start();
  reply.hijack();
  const raw = reply.raw;
  const socket = request.raw.socket;
  const headers: Record<string, string | number | string[]> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) headers[name] = value;
  raw.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    // The connection serves only this stream: when it ends, the socket goes too, so a closing server does not keep
    // an idle keep-alive connection open.
    connection: 'close',
  });
  raw.write('retry: 3000\n\n');

  let sequence = 0;
  let done = false;
  const end = () => {
    if (done) return;
    done = true;
    clearInterval(ping);
    unsubscribe();
    // The connection carries nothing else: it goes with the stream. Node detaches the response from a socket the
    // client has half-closed and would leave that socket open (and a closing server waiting on it).
    if (!raw.writableEnded) raw.end(() => socket?.destroy());
    if (socket) setTimeout(() => socket.destroy(), 1000).unref();
  };
  const write = (chunk: string) => {
    if (done || raw.destroyed) return;
    raw.write(chunk);
    if (raw.writableLength > MAX_BUFFERED_BYTES) {
      request.log.warn('event stream client too slow; closed');
      end();
    }
  };
  let checking = false;
  const ping = setInterval(() => {
    write(': ping\n\n');
    if (!options.stillAllowed || checking || done) return;
    checking = true;
    options
      .stillAllowed()
      .then((allowed) => {
        if (!allowed) end();
      })
      .catch((error: unknown) => request.log.warn({ err: error }, 'event stream access check failed'))
      .finally(() => {
        checking = false;
      });
  }, options.hub.pingIntervalMs);
  const unsubscribe = options.hub.subscribe({
    ...options.subscription,
    deliver: (event) => {
      const data = options.transform ? options.transform(event) : event.data;
      sequence += 1;
      write(`event: ${event.type}\nid: ${sequence}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    close: end,
  });
  raw.on('close', end);
  raw.on('error', end);
  // A client that goes away half-closes its side: that is the end of the stream too.
  socket?.on('end', end);
  socket?.on('close', end);
}
