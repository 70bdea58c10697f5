// What a source sync does, run by the `content-source-sync` job (jobs.ts). A website is crawled again and its
// items brought in line with the pages found; a files or manual source has nothing outside to re-read, so its
// sync re-indexes the live items that are not indexed.
import { createHash } from 'node:crypto';
import { and, eq, inArray, isNull, ne } from 'drizzle-orm';
import type { Db, Tx } from '../../../db/client.js';
import { sourceItems, sources } from '../../../db/schema/index.js';
import { newId } from '../../../ids.js';
import type { JobContext } from '../../../jobs/queue.js';
import { type CrawlResult, crawlWebsite } from '../extract/crawl.js';
import { removeChunks } from '../index/indexer.js';
import { indexDocument, unindexDocument } from '../jobs.js';
import { SYNC_TIMEOUT_SECONDS, type SyncPayload } from './jobs.js';
import { websiteConfig } from './schemas.js';

type SourceRow = typeof sources.$inferSelect;

/** Leaves the last minute of the job's time to write what the crawl found. */
const CRAWL_BUDGET_MS = (SYNC_TIMEOUT_SECONDS - 60) * 1000;
const MAX_ERROR_LENGTH = 1000;
const INSERT_BATCH = 100;
const MAX_TITLE_LENGTH = 500;

/** What an item's indexed text is made of; a change of either re-indexes it. */
export function contentHash(title: string, content: string): string {
  return createHash('sha256').update(title).update('\u0000').update(content).digest('hex');
}

export const itemDocument = (workspaceId: string, documentId: string) => ({
  workspaceId,
  documentType: 'source_item' as const,
  documentId,
});

export async function syncSource(payload: SyncPayload, context: JobContext): Promise<void> {
  const { db, log, finalAttempt } = context;
  const [source] = await db
    .update(sources)
    .set({ syncStatus: 'syncing', updatedAt: new Date() })
    .where(and(eq(sources.workspaceId, payload.workspaceId), eq(sources.id, payload.sourceId)))
    .returning();
  if (!source) {
    log.info(payload, 'source sync skipped: the source no longer exists');
    return;
  }
  try {
    if (source.type === 'website') await syncWebsite(context, source);
    else await reindexItems(context, source);
  } catch (error) {
    // Earlier attempts stay `syncing`: pg-boss retries them. The last one records the failure for good.
    if (finalAttempt) await finish(db, source, { syncStatus: 'failed', lastError: errorMessage(error) });
    throw error;
  }
}

async function syncWebsite(context: JobContext, source: SourceRow): Promise<void> {
  const { db, log } = context;
  const config = websiteConfig.safeParse(source.config);
  if (!config.success) {
    await finish(db, source, { syncStatus: 'failed', lastError: 'The source\'s config is not a valid website config' });
    return;
  }
  const crawl = await crawlWebsite({
    startUrl: config.data.startUrl,
    ...(config.data.sitemapUrl ? { sitemapUrl: config.data.sitemapUrl } : {}),
    maxPages: config.data.maxPages,
    signal: AbortSignal.timeout(CRAWL_BUDGET_MS),
  });
  if (crawl.pages.length === 0) {
    // Nothing came back (the site is down, robots.txt forbids it, the start page failed): keep what we had.
    await finish(db, source, { syncStatus: 'failed', lastError: noPagesMessage(crawl) });
    return;
  }
  const outcome = await db.transaction(async (tx) => {
    if (!(await lockSource(tx, source))) return undefined;
    const counts = await applyPages(tx, context, source, crawl);
    await finish(tx, source, { syncStatus: 'synced', lastError: partialFailureMessage(crawl) });
    return counts;
  });
  log.info({ sourceId: source.id, pages: crawl.pages.length, failed: crawl.errors.length, ...outcome }, 'website synced');
}

/**
 * Upserts the crawled pages by URL and deletes the items of pages not seen this time, sending the index jobs
 * in the same transaction: a new or changed page is (re)indexed, a vanished one is taken out of the index.
 */
async function applyPages(tx: Tx, context: JobContext, source: SourceRow, crawl: CrawlResult) {
  const { workspaceId, id: sourceId } = source;
  const existing = await tx
    .select({ id: sourceItems.id, externalKey: sourceItems.externalKey, contentHash: sourceItems.contentHash, deletedAt: sourceItems.deletedAt })
    .from(sourceItems)
    .where(and(eq(sourceItems.workspaceId, workspaceId), eq(sourceItems.sourceId, sourceId)))
    .for('update');
  const byKey = new Map(existing.map((item) => [item.externalKey, item]));
  const pages = new Map(crawl.pages.map((page) => [page.url, page]));
  const now = new Date();
  const inserted: (typeof sourceItems.$inferInsert)[] = [];
  const reindexed: string[] = [];

  for (const page of pages.values()) {
    const title = (page.title.trim() || page.url).slice(0, MAX_TITLE_LENGTH);
    const hash = contentHash(title, page.content);
    const item = byKey.get(page.url);
    if (!item) {
      inserted.push({
        id: newId(),
        workspaceId,
        sourceId,
        externalKey: page.url,
        title,
        url: page.url,
        content: page.content,
        contentHash: hash,
      });
      continue;
    }
    if (item.contentHash === hash && item.deletedAt === null) continue;
    // Changed, or back after having vanished: the row keeps its id.
    await tx
      .update(sourceItems)
      .set({ title, url: page.url, content: page.content, contentHash: hash, deletedAt: null, indexStatus: 'pending', indexError: null, updatedAt: now })
      .where(and(eq(sourceItems.workspaceId, workspaceId), eq(sourceItems.id, item.id)));
    reindexed.push(item.id);
  }
  for (let i = 0; i < inserted.length; i += INSERT_BATCH) await tx.insert(sourceItems).values(inserted.slice(i, i + INSERT_BATCH));

  const vanished = existing.filter((item) => item.deletedAt === null && !pages.has(item.externalKey)).map((item) => item.id);
  if (vanished.length > 0) {
    await tx
      .update(sourceItems)
      .set({ deletedAt: now, updatedAt: now })
      .where(and(eq(sourceItems.workspaceId, workspaceId), eq(sourceItems.sourceId, sourceId), isNull(sourceItems.deletedAt), inArray(sourceItems.id, vanished)));
    await removeChunks(tx, workspaceId, 'source_item', vanished);
  }

  for (const id of [...inserted.map((item) => item.id!), ...reindexed]) await context.jobs.send(tx, indexDocument, itemDocument(workspaceId, id));
  for (const id of vanished) await context.jobs.send(tx, unindexDocument, itemDocument(workspaceId, id));
  return { added: inserted.length, updated: reindexed.length, removed: vanished.length };
}

/** Files and manual sources: every live item that is not indexed (pending, failed) is queued for indexing again. */
async function reindexItems(context: JobContext, source: SourceRow): Promise<void> {
  const queued = await context.db.transaction(async (tx) => {
    if (!(await lockSource(tx, source))) return undefined;
    const stale = await tx
      .update(sourceItems)
      .set({ indexStatus: 'pending', indexError: null })
      .where(
        and(
          eq(sourceItems.workspaceId, source.workspaceId),
          eq(sourceItems.sourceId, source.id),
          isNull(sourceItems.deletedAt),
          ne(sourceItems.indexStatus, 'indexed'),
        ),
      )
      .returning({ id: sourceItems.id });
    for (const item of stale) await context.jobs.send(tx, indexDocument, itemDocument(source.workspaceId, item.id));
    await finish(tx, source, { syncStatus: 'synced', lastError: null });
    return stale.length;
  });
  context.log.info({ sourceId: source.id, queued }, 'source items re-indexed');
}

/** Locks the source row for the sync's writes; false when it was deleted meanwhile. */
async function lockSource(tx: Tx, source: SourceRow): Promise<boolean> {
  const [row] = await tx
    .select({ id: sources.id })
    .from(sources)
    .where(and(eq(sources.workspaceId, source.workspaceId), eq(sources.id, source.id)))
    .for('update');
  return row !== undefined;
}

async function finish(
  db: Db | Tx,
  source: SourceRow,
  outcome: { syncStatus: 'synced' | 'failed'; lastError: string | null },
): Promise<void> {
  const now = new Date();
  await db
    .update(sources)
    .set({
      syncStatus: outcome.syncStatus,
      lastError: outcome.lastError?.slice(0, MAX_ERROR_LENGTH) ?? null,
      updatedAt: now,
      ...(outcome.syncStatus === 'synced' ? { lastSyncedAt: now } : {}),
    })
    .where(and(eq(sources.workspaceId, source.workspaceId), eq(sources.id, source.id)));
}

function noPagesMessage(crawl: CrawlResult): string {
  const reasons = crawl.errors.slice(0, 3).map((error) => `${error.url}: ${error.message}`);
  return reasons.length > 0 ? `No page could be read. ${reasons.join('; ')}` : 'No page could be read: the site has no HTML pages to crawl';
}

function partialFailureMessage(crawl: CrawlResult): string | null {
  const [first] = crawl.errors;
  if (!first) return null;
  const count = crawl.errors.length;
  return `${count} page${count === 1 ? '' : 's'} could not be read (${crawl.pages.length} read); first: ${first.url}: ${first.message}`;
}

function errorMessage(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `The sync took longer than ${CRAWL_BUDGET_MS / 60_000} minutes`;
  return error instanceof Error ? error.message : String(error);
}
