// One LISTEN per process on the events channel, fanned out to the open SSE streams of the notified workspace.
// Every process LISTENs, so a write committed by any process reaches the streams held by every other.
import { and, eq } from 'drizzle-orm';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Database } from '../../db/client.js';
import { listen } from '../../db/listen.js';
import { conversations, messages } from '../../db/schema/index.js';
import { EVENTS_CHANNEL } from './publish.js';
import { toMessageRecord } from '../channels/message-record.js';

export interface HubEvent {
  type: string;
  workspaceId: string;
  conversationId: string;
  data: Record<string, unknown>;
}

export interface Subscription {
  workspaceId: string;
  /** Only events of these types (all when absent). */
  types?: ReadonlySet<string>;
  /** Only events of conversations of this contact on this channel (a live-chat visitor). */
  visitor?: { contactId: string; channelId: string };
  deliver(event: HubEvent): void;
  /** Ends the stream: the server is closing. */
  close(): void;
}

interface Notification {
  type: string;
  workspaceId: string;
  conversationId: string;
  data?: Record<string, unknown>;
  ref?: { id: string };
}

type Owner = { contactId: string; channelId: string } | null;

export class EventHub {
  private readonly byWorkspace = new Map<string, Set<Subscription>>();
  /** Conversation → its contact and channel, which never change: visitor streams filter on them. */
  private readonly owners = new LRUCache<string, { value: Owner }>({ max: 50_000 });
  private listening: Promise<void> | undefined;
  private unlisten: (() => Promise<void>) | undefined;
  /** Notifications are handled one after another, so every stream sees them in commit order. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  /** How often each stream sends `: ping` (and re-checks its access); tests shorten it. */
  pingIntervalMs = 25_000;

  constructor(
    private readonly database: Database,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Opens this process's LISTEN the first time a stream needs it; later calls share it. */
  start(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('event hub is closed'));
    this.listening ??= listen(this.database, EVENTS_CHANNEL, (payload) => this.receive(payload)).then(
      (unlisten) => {
        this.unlisten = unlisten;
      },
      (error: unknown) => {
        this.listening = undefined;
        throw error;
      },
    );
    return this.listening;
  }

  /** Adds a stream (after `start()` has resolved); returns its removal. */
  subscribe(subscription: Subscription): () => void {
    let set = this.byWorkspace.get(subscription.workspaceId);
    if (!set) {
      set = new Set();
      this.byWorkspace.set(subscription.workspaceId, set);
    }
    set.add(subscription);
    return () => {
      const current = this.byWorkspace.get(subscription.workspaceId);
      if (!current) return;
      current.delete(subscription);
      if (current.size === 0) this.byWorkspace.delete(subscription.workspaceId);
    };
  }

  /** Open streams, for tests and health. */
  get size(): number {
    let n = 0;
    for (const set of this.byWorkspace.values()) n += set.size;
    return n;
  }

  /** Ends every open stream (the server is closing: graceful shutdown must not wait for them). */
  endStreams(): void {
    this.closed = true;
    for (const set of [...this.byWorkspace.values()]) {
      for (const subscription of [...set]) {
        try {
          subscription.close();
        } catch (error) {
          this.log.warn({ err: error }, 'closing an event stream failed');
        }
      }
    }
    this.byWorkspace.clear();
  }

  async stop(): Promise<void> {
    this.endStreams();
    const listening = this.listening;
    this.listening = undefined;
    await listening?.catch(() => {});
    await this.unlisten?.().catch(() => {});
    this.unlisten = undefined;
    await this.chain.catch(() => {});
  }

  private receive(payload: string): void {
    let notification: Notification;
    try {
      notification = JSON.parse(payload) as Notification;
    } catch {
      this.log.warn('unreadable event notification ignored');
      return;
    }
    if (typeof notification?.type !== 'string' || typeof notification.workspaceId !== 'string') return;
    if (!this.byWorkspace.has(notification.workspaceId)) return;
    this.chain = this.chain
      .then(() => this.dispatch(notification))
      .catch((error: unknown) => this.log.warn({ err: error, type: notification.type }, 'event dispatch failed'));
  }

  private async dispatch(notification: Notification): Promise<void> {
    const { type, workspaceId, conversationId } = notification;
    if (!this.byWorkspace.get(workspaceId)?.size) return;
    const data = notification.data ?? (await this.resolve(notification));
    if (!data) return;
    const event: HubEvent = { type, workspaceId, conversationId, data };
    let owner: Owner | undefined;
    for (const subscription of [...(this.byWorkspace.get(workspaceId) ?? [])]) {
      if (subscription.types && !subscription.types.has(type)) continue;
      if (subscription.visitor) {
        owner ??= await this.ownerOf(workspaceId, conversationId);
        if (!owner || owner.contactId !== subscription.visitor.contactId || owner.channelId !== subscription.visitor.channelId) {
          continue;
        }
      }
      try {
        subscription.deliver(event);
      } catch (error) {
        this.log.warn({ err: error }, 'event delivery failed');
      }
    }
  }

  /**
   * A record too large for a notification came as a reference: a message is read back (as it is now, which is at
   * least as new as the event); anything else is passed on as `{ref: {id}}` for the client to fetch.
   */
  private async resolve(notification: Notification): Promise<Record<string, unknown> | undefined> {
    const id = notification.ref?.id;
    if (typeof id !== 'string') return undefined;
    if (!notification.type.startsWith('message.')) return { ref: { id } };
    const [row] = await this.database.db
      .select()
      .from(messages)
      .where(and(eq(messages.workspaceId, notification.workspaceId), eq(messages.id, id)))
      .limit(1);
    return row ? toMessageRecord(row) : undefined;
  }

  private async ownerOf(workspaceId: string, conversationId: string): Promise<Owner> {
    const key = `${workspaceId}:${conversationId}`;
    const hit = this.owners.get(key);
    if (hit) return hit.value;
    const [row] = await this.database.db
      .select({ contactId: conversations.contactId, channelId: conversations.channelId })
      .from(conversations)
      .where(and(eq(conversations.workspaceId, workspaceId), eq(conversations.id, conversationId)))
      .limit(1);
    const value = row ?? null;
    // A missing conversation is not remembered: it may be committed by the time of the next event.
    if (row) this.owners.set(key, { value });
    return value;
  }
}

const hubs = new WeakMap<FastifyInstance, EventHub>();

/** The app's hub (one per app, so one LISTEN per process), created with its close hooks on first use. */
export function eventHub(app: FastifyInstance, database: Database): EventHub {
  let hub = hubs.get(app);
  if (hub) return hub;
  const created = new EventHub(database, app.log);
  hub = created;
  hubs.set(app, created);
  // preClose runs before the server stops accepting and waits for open responses: streams end here.
  app.addHook('preClose', async () => created.endStreams());
  app.addHook('onClose', async () => created.stop());
  return created;
}
