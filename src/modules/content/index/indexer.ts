// Keeps the search index in step with the documents. Adding to the index goes through the queue (`reconcile`);
// anything that narrows what may be found (unpublish, delete, public → internal) is also applied at once, inside
// the write's own transaction, so a draft or a deleted item is never served while its removal job waits.
import { and, eq, inArray, sql } from 'drizzle-orm';
import { type Db, queryRows, type Tx } from '../../../db/client.js';
import {
  articles,
  contentSettings,
  type DocumentType,
  searchChunks,
  sourceItems,
  sources,
  type Visibility,
} from '../../../db/schema/index.js';
import { chunkText } from './chunker.js';

export const DEFAULT_SEARCH_LANGUAGE = 'english';

export interface DocumentRef {
  workspaceId: string;
  documentType: DocumentType;
  documentId: string;
}

interface IndexableDocument {
  title: string;
  text: string;
  visibility: Visibility;
  url: string | null;
}

/** The workspace's text-search configuration name. */
export async function searchLanguage(db: Tx, workspaceId: string): Promise<string> {
  const [row] = await db
    .select({ language: contentSettings.searchLanguage })
    .from(contentSettings)
    .where(eq(contentSettings.workspaceId, workspaceId));
  return row?.language ?? DEFAULT_SEARCH_LANGUAGE;
}

/**
 * Brings one document's chunks to what the document is now: replaced when it may be found, deleted otherwise.
 * Idempotent, and safe to run concurrently for one document: the document row is locked for the duration.
 */
export async function reconcileDocument(db: Db, ref: DocumentRef): Promise<'indexed' | 'removed'> {
  return db.transaction(async (tx) => {
    const document = await lockIndexable(tx, ref);
    await removeChunks(tx, ref.workspaceId, ref.documentType, [ref.documentId]);
    if (document) {
      const language = await searchLanguage(tx, ref.workspaceId);
      const chunks = chunkText(document.text);
      // A document with a title and no body is still findable by its title.
      const rows = (chunks.length ? chunks : [{ heading: null, content: '' }]).map((chunk, position) => ({
        workspaceId: ref.workspaceId,
        documentType: ref.documentType,
        documentId: ref.documentId,
        position,
        title: document.title,
        heading: chunk.heading,
        content: chunk.content,
        visibility: document.visibility,
        url: document.url,
        language,
      }));
      for (let i = 0; i < rows.length; i += 500) await tx.insert(searchChunks).values(rows.slice(i, i + 500));
    }
    const status = document ? 'indexed' : 'removed';
    await setIndexState(tx, ref, { indexStatus: status, indexedAt: new Date(), indexError: null });
    return status;
  });
}

/** Records that indexing gave up on a document (after the queue's last retry). */
export async function markIndexFailed(db: Db, ref: DocumentRef, message: string): Promise<void> {
  await setIndexState(db, ref, { indexStatus: 'failed', indexError: message.slice(0, 1000) });
}

export async function removeChunks(tx: Tx, workspaceId: string, documentType: DocumentType, documentIds: string[]): Promise<void> {
  if (documentIds.length === 0) return;
  await tx
    .delete(searchChunks)
    .where(
      and(
        eq(searchChunks.workspaceId, workspaceId),
        eq(searchChunks.documentType, documentType),
        inArray(searchChunks.documentId, documentIds),
      ),
    );
}

/** Narrows (or widens) who may find already indexed chunks, at once. */
export async function setChunkVisibility(
  tx: Tx,
  workspaceId: string,
  documentType: DocumentType,
  documentIds: string[] | 'all-of-source',
  visibility: Visibility,
  sourceId?: string,
): Promise<void> {
  const scope =
    documentIds === 'all-of-source'
      ? sql`${searchChunks.documentId} in (select ${sourceItems.id} from ${sourceItems} where ${sourceItems.workspaceId} = ${workspaceId} and ${sourceItems.sourceId} = ${sourceId ?? null})`
      : inArray(searchChunks.documentId, documentIds);
  await tx
    .update(searchChunks)
    .set({ visibility })
    .where(and(eq(searchChunks.workspaceId, workspaceId), eq(searchChunks.documentType, documentType), scope));
}

async function lockIndexable(tx: Tx, ref: DocumentRef): Promise<IndexableDocument | undefined> {
  if (ref.documentType === 'article') {
    const [article] = await tx
      .select()
      .from(articles)
      .where(and(eq(articles.workspaceId, ref.workspaceId), eq(articles.id, ref.documentId)))
      .for('update');
    if (article?.status !== 'published') return undefined;
    const text = [article.description, article.body].filter(Boolean).join('\n\n');
    return { title: article.title, text, visibility: article.visibility, url: null };
  }
  // Locks in the order every writer of sources uses (source, then its items): a share lock on the source holds
  // off a visibility change until these chunks are written, so that change relabels them too.
  const [owner] = await tx
    .select({ sourceId: sourceItems.sourceId })
    .from(sourceItems)
    .where(and(eq(sourceItems.workspaceId, ref.workspaceId), eq(sourceItems.id, ref.documentId)));
  if (!owner) return undefined;
  const [source] = await tx
    .select({ visibility: sources.visibility })
    .from(sources)
    .where(and(eq(sources.workspaceId, ref.workspaceId), eq(sources.id, owner.sourceId)))
    .for('share');
  const [item] = await tx
    .select()
    .from(sourceItems)
    .where(and(eq(sourceItems.workspaceId, ref.workspaceId), eq(sourceItems.id, ref.documentId)))
    .for('update');
  if (!source || !item || item.deletedAt) return undefined;
  return { title: item.title, text: item.content, visibility: source.visibility, url: item.url };
}

type IndexState = { indexStatus: 'indexed' | 'removed' | 'failed'; indexedAt?: Date; indexError: string | null };

async function setIndexState(tx: Tx, ref: DocumentRef, state: IndexState): Promise<void> {
  const table = ref.documentType === 'article' ? articles : sourceItems;
  await tx
    .update(table)
    .set(state)
    .where(and(eq(table.workspaceId, ref.workspaceId), eq(table.id, ref.documentId)));
}

/** Every published article and live source item of a workspace, in pages of 500 (for a full rebuild). */
export async function* indexableDocuments(db: Db, workspaceId: string): AsyncGenerator<DocumentRef> {
  for (const documentType of ['article', 'source_item'] as const) {
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = await queryRows<{ id: string }>(
        db,
        documentType === 'article'
          ? sql`select id from content_articles where workspace_id = ${workspaceId} and status = 'published' and id > ${after} order by id limit 500`
          : sql`select id from content_source_items where workspace_id = ${workspaceId} and deleted_at is null and id > ${after} order by id limit 500`,
      );
      for (const row of rows) yield { workspaceId, documentType, documentId: row.id };
      if (rows.length < 500) break;
      after = rows.at(-1)!.id;
    }
  }
}
