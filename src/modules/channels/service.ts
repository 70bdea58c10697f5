// Channels: WhatsApp Business numbers, Facebook pages, Instagram accounts and live-chat widgets of a workspace.
// Meta credentials are stored encrypted (crypto.ts) and never leave the service: records show `{configured: true}`.
import { and, count, desc, eq, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { Tx } from '../../db/client.js';
import { type ChannelType, channels, conversationCounts, conversations } from '../../db/schema/index.js';
import { iso } from '../../http/api.js';
import { type ErrorDetail, errors } from '../../http/errors.js';
import type { WorkspaceContext } from '../../http/guard.js';
import type { Page, PageQuery } from '../../http/pagination.js';
import { newId } from '../../ids.js';
import { decryptJson, encryptJson } from './crypto.js';
import {
  CONFIG_SCHEMAS,
  type ChannelRecord,
  type CreateChannelInput,
  type MetaSecrets,
  SECRET_NAMES,
  type UpdateChannelInput,
} from './schemas.js';

export type ChannelRow = typeof channels.$inferSelect;

/** What the channel service needs besides the workspace context. */
export interface ChannelDeps {
  /** The service's secret: the encryption key derives from it. */
  secret: string;
  /** BASE_URL, for the webhook URL shown to Meta. */
  baseUrl: string;
}

export const isMetaChannel = (type: ChannelType): type is 'whatsapp' | 'messenger' | 'instagram' => type !== 'livechat';

export function webhookPath(channelId: string): string {
  return `/api/webhooks/meta/${channelId}`;
}

export function toChannelRecord(row: ChannelRow, baseUrl: string): ChannelRecord {
  const secrets: ChannelRecord['secrets'] = {};
  if (row.secrets) for (const key of SECRET_NAMES) secrets[key] = { configured: true };
  return {
    id: row.id,
    workspaceId: row.workspaceId,
    type: row.type,
    name: row.name,
    config: row.config,
    secrets,
    ...(isMetaChannel(row.type) ? { webhookUrl: `${baseUrl}${webhookPath(row.id)}` } : {}),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** The stored credentials of a Meta channel, decrypted; throws if they are absent or sealed with another secret. */
export function channelSecrets(row: ChannelRow, secret: string): MetaSecrets {
  if (!row.secrets) throw new Error(`channel ${row.id} has no stored credentials`);
  return decryptJson<MetaSecrets>(secret, row.secrets);
}

/** A channel by id alone (webhooks and jobs know the channel before any workspace). */
export async function findChannel(db: Tx, channelId: string): Promise<ChannelRow | undefined> {
  const [row] = await db.select().from(channels).where(eq(channels.id, channelId));
  return row;
}

const inWorkspace = (ctx: WorkspaceContext, id: string) => and(eq(channels.workspaceId, ctx.workspaceId), eq(channels.id, id));

/** Newest first. */
export async function listChannels(ctx: WorkspaceContext, deps: ChannelDeps, page: PageQuery): Promise<Page<ChannelRecord>> {
  const where = eq(channels.workspaceId, ctx.workspaceId);
  const rows = await ctx.db
    .select({ channel: channels, total: sql<number>`count(*) over ()`.mapWith(Number) })
    .from(channels)
    .where(where)
    .orderBy(desc(channels.createdAt), desc(channels.id))
    .limit(page.limit)
    .offset(page.offset);
  let total = rows[0]?.total ?? 0;
  if (rows.length === 0 && page.offset > 0) {
    const [counted] = await ctx.db.select({ total: count() }).from(channels).where(where);
    total = counted?.total ?? 0;
  }
  return { items: rows.map((row) => toChannelRecord(row.channel, deps.baseUrl)), total };
}

export async function getChannel(ctx: WorkspaceContext, deps: ChannelDeps, id: string): Promise<ChannelRecord> {
  const [row] = await ctx.db.select().from(channels).where(inWorkspace(ctx, id));
  if (!row) throw errors.notFound();
  return toChannelRecord(row, deps.baseUrl);
}

export async function createChannel(ctx: WorkspaceContext, deps: ChannelDeps, input: CreateChannelInput): Promise<ChannelRecord> {
  const now = new Date();
  const [row] = await ctx.db
    .insert(channels)
    .values({
      id: newId(),
      workspaceId: ctx.workspaceId,
      type: input.type,
      name: input.name,
      config: input.config,
      secrets: input.type === 'livechat' ? null : encryptJson(deps.secret, input.secrets),
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return toChannelRecord(row!, deps.baseUrl);
}

function prefixed(prefix: string, error: z.ZodError): ErrorDetail[] {
  return error.issues.flatMap((issue) => {
    const base = [prefix, ...issue.path.map(String)].join('.');
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: `${base}.${key}`, message: 'Unknown property' }));
    return [{ path: base, message: issue.message }];
  });
}

/** The type never changes; config fields are merged and re-checked; given secrets replace the stored ones. */
export async function updateChannel(
  ctx: WorkspaceContext,
  deps: ChannelDeps,
  id: string,
  input: UpdateChannelInput,
): Promise<ChannelRecord> {
  return ctx.db.transaction(async (tx) => {
    const [row] = await tx.select().from(channels).where(inWorkspace(ctx, id)).for('update');
    if (!row) throw errors.notFound();
    const changes: Partial<typeof channels.$inferInsert> = { updatedAt: new Date() };
    if (input.name !== undefined) changes.name = input.name;
    if (input.config !== undefined) {
      const parsed = CONFIG_SCHEMAS[row.type].safeParse({ ...row.config, ...input.config });
      if (!parsed.success) throw errors.validation(prefixed('config', parsed.error));
      changes.config = parsed.data;
    }
    if (input.secrets !== undefined) {
      if (!isMetaChannel(row.type)) {
        throw errors.validation([{ path: 'secrets', message: 'A live-chat channel has no credentials' }]);
      }
      const given = Object.fromEntries(Object.entries(input.secrets).filter(([, value]) => value !== undefined));
      changes.secrets = encryptJson(deps.secret, { ...channelSecrets(row, deps.secret), ...given });
    }
    const [updated] = await tx.update(channels).set(changes).where(inWorkspace(ctx, id)).returning();
    return toChannelRecord(updated!, deps.baseUrl);
  });
}

/**
 * Deletes the channel with its identities, conversations and messages (foreign keys cascade); the workspace's
 * exact conversation total moves in the same transaction.
 */
export async function deleteChannel(ctx: WorkspaceContext, id: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const [row] = await tx.select({ id: channels.id }).from(channels).where(inWorkspace(ctx, id)).for('update');
    if (!row) throw errors.notFound();
    const [counted] = await tx
      .select({ n: count() })
      .from(conversations)
      .where(and(eq(conversations.workspaceId, ctx.workspaceId), eq(conversations.channelId, id)));
    await tx.delete(channels).where(inWorkspace(ctx, id));
    const removed = counted?.n ?? 0;
    if (removed > 0) {
      await tx
        .update(conversationCounts)
        .set({ total: sql`greatest(${conversationCounts.total} - ${removed}, 0)` })
        .where(eq(conversationCounts.workspaceId, ctx.workspaceId));
    }
  });
}
