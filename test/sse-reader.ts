// A Server-Sent Events client for the stream tests (events, live chat): a real connection to a listening app,
// since app.inject waits for a response to end.
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import type { App } from '../src/app.js';

/** The parts of a fetch Response the tests read. */
export interface StreamResponse {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
}

/** A Server-Sent Events reader on a real connection: parsed events as they arrive, and the end of the stream. */
export class SseReader {
  readonly events: Array<{ event: string; id: string; data: any }> = [];
  readonly comments: string[] = [];
  retry: number | undefined;
  ended = false;
  private buffer = '';
  private waiters: Array<() => void> = [];
  readonly done: Promise<void>;

  readonly response: StreamResponse;

  private constructor(
    private readonly message: IncomingMessage,
    private readonly req: ClientRequest,
  ) {
    this.response = {
      status: message.statusCode ?? 0,
      ok: (message.statusCode ?? 0) >= 200 && (message.statusCode ?? 0) < 300,
      headers: {
        get: (name) => {
          const value = message.headers[name.toLowerCase()];
          return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
        },
      },
    };
    this.done = this.read();
  }

  /** node:http on a connection of its own (no pool: fetch's pool may open spare connections a closing server waits on). */
  static async open(url: string, headers: Record<string, string> = {}): Promise<SseReader> {
    const { message, req } = await new Promise<{ message: IncomingMessage; req: ClientRequest }>((resolve, reject) => {
      const req = request(url, { headers, agent: false }, (message) => resolve({ message, req }));
      req.on('error', reject);
      req.end();
    });
    const reader = new SseReader(message, req);
    if (reader.response.ok) await reader.until(() => reader.retry !== undefined, 5000, 'retry line');
    return reader;
  }

  private async read(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.message as AsyncIterable<Buffer>) {
        this.buffer += decoder.decode(chunk, { stream: true });
        let cut = this.buffer.indexOf('\n\n');
        while (cut >= 0) {
          this.parse(this.buffer.slice(0, cut));
          this.buffer = this.buffer.slice(cut + 2);
          cut = this.buffer.indexOf('\n\n');
        }
        this.notify();
      }
    } catch {
      // aborted by the test
    }
    this.ended = true;
    this.notify();
  }

  private parse(block: string): void {
    const fields: Record<string, string> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
      else {
        const colon = line.indexOf(':');
        fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
      }
    }
    if (fields.retry !== undefined) this.retry = Number(fields.retry);
    if (fields.data !== undefined) this.events.push({ event: fields.event ?? 'message', id: fields.id ?? '', data: JSON.parse(fields.data) });
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  async until(check: () => boolean, timeoutMs = 5000, label = 'condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (this.ended && !check()) throw new Error(`stream ended before ${label}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`${label} not reached within ${timeoutMs} ms; events: ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The first event matching `match`, waiting for it. */
  async next(match: (event: { event: string; data: any }) => boolean, timeoutMs = 5000) {
    await this.until(() => this.events.some(match), timeoutMs, 'event');
    return this.events.find(match)!;
  }

  close(): void {
    this.req.destroy();
  }
}

export async function listenOn(app: App): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('not listening on a port');
  return `http://127.0.0.1:${address.port}`;
}
