// Full-text search over the knowledge base: published articles and live source items, ranked per document by
// their best-matching chunk (ts_rank with the title/heading/passage weights and no length normalisation, so the
// chunk that matches in its text beats a short one that only shares the title; ts_rank_cd's proximity measure cost
// half as much again on queries matching most of a large index, and "quoted phrases" already ask for adjacency).
import { sql } from 'drizzle-orm';
import { queryRows, type Tx } from '../../../db/client.js';
import { contentSettings as settingsTable } from '../../../db/schema/index.js';
import type { WorkspaceContext } from '../../../http/guard.js';
import type { DocumentType, Visibility } from '../../../db/schema/index.js';
import { iso } from '../../../http/api.js';
import { DEFAULT_SEARCH_LANGUAGE, searchLanguage } from '../index/indexer.js';
import { reindexWorkspace } from '../jobs.js';
import type { SearchQuery, SearchResults } from './schemas.js';

// Private-use characters mark matches inside ts_headline's output; they cannot collide with escaped text.
const START = '\uE000';
const STOP = '\uE001';
const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=35, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "`;

interface HitRow {
  document_type: DocumentType;
  document_id: string;
  title: string;
  heading: string | null;
  url: string | null;
  visibility: Visibility;
  source_id: string | null;
  score: number;
  snippet: string;
  total: number;
}

export async function search(ctx: WorkspaceContext, query: SearchQuery): Promise<SearchResults> {
  const language = await searchLanguage(ctx.db, ctx.workspaceId);
  const filters = [
    query.visibility ? sql`and c.visibility = ${query.visibility}` : sql``,
    query.documentType ? sql`and c.document_type = ${query.documentType}` : sql``,
  ];
  // Rank every matching chunk and keep each document's best, carrying only keys through the sort; then read
  // the page's chunks and build their snippets (ts_headline re-parses the text, the costly part) for the page only.
  // The tsquery is written out where it is used rather than computed once in a CTE: as an expression of the
  // parameters the planner folds it to a constant and can estimate how many chunks match it.
  const tsquery = sql`websearch_to_tsquery(${language}::regconfig, ${query.q})`;
  const rows = await queryRows<HitRow>(
    ctx.db,
    sql`
      with best as (
        select distinct on (c.document_type, c.document_id)
          c.document_type, c.document_id, c.position, ts_rank(c.search_vector, ${tsquery}) as score
        from content_search_chunks c
        where c.workspace_id = ${ctx.workspaceId} and c.search_vector @@ ${tsquery} ${sql.join(filters, sql` `)}
        order by c.document_type, c.document_id, score desc, c.position
      ),
      page as (
        select *, count(*) over () as total from best
        order by score desc, document_id
        limit ${query.limit} offset ${query.offset}
      )
      select page.document_type, page.document_id, page.score, page.total::int as total,
        c.title, c.heading, c.url, c.visibility, i.source_id,
        ts_headline(c.language, c.content, ${tsquery}, ${HEADLINE_OPTIONS}) as snippet
      from page
      join content_search_chunks c
        on c.workspace_id = ${ctx.workspaceId} and c.document_type = page.document_type
        and c.document_id = page.document_id and c.position = page.position
      left join content_source_items i
        on page.document_type = 'source_item' and i.workspace_id = ${ctx.workspaceId} and i.id = page.document_id
      order by page.score desc, page.document_id`,
  );
  const total = rows[0]?.total ?? (query.offset > 0 ? await countMatches(ctx, language, query) : 0);
  return {
    items: rows.map((row) => ({
      documentType: row.document_type,
      documentId: row.document_id,
      title: row.title,
      heading: row.heading,
      snippet: markSnippet(row.snippet),
      score: Number(row.score),
      visibility: row.visibility,
      ...(row.url ? { url: row.url } : {}),
      ...(row.source_id ? { sourceId: row.source_id } : {}),
    })),
    total,
  };
}

/** The total when the requested page lies past the last hit. */
async function countMatches(ctx: WorkspaceContext, language: string, query: SearchQuery): Promise<number> {
  const rows = await queryRows<{ n: number }>(
    ctx.db,
    sql`select count(distinct (c.document_type, c.document_id))::int as n
        from content_search_chunks c
        where c.workspace_id = ${ctx.workspaceId}
          and c.search_vector @@ websearch_to_tsquery(${language}::regconfig, ${query.q})
          ${query.visibility ? sql`and c.visibility = ${query.visibility}` : sql``}
          ${query.documentType ? sql`and c.document_type = ${query.documentType}` : sql``}`,
  );
  return rows[0]?.n ?? 0;
}

function markSnippet(headline: string): string {
  return escapeHtml(headline).replaceAll(START, '<mark>').replaceAll(STOP, '</mark>');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

export async function getSettings(ctx: WorkspaceContext) {
  const [row] = await ctx.db.select().from(settingsTable).where(sql`${settingsTable.workspaceId} = ${ctx.workspaceId}`);
  return {
    searchLanguage: (row?.searchLanguage ?? DEFAULT_SEARCH_LANGUAGE) as 'english',
    updatedAt: row ? iso(row.updatedAt) : null,
  };
}

/** Changing the language re-stems the whole index: every indexed document is rebuilt by a job. */
export async function updateSettings(ctx: WorkspaceContext, searchLanguage: string) {
  await ctx.db.transaction(async (tx: Tx) => {
    const [before] = await tx
      .select({ language: settingsTable.searchLanguage })
      .from(settingsTable)
      .where(sql`${settingsTable.workspaceId} = ${ctx.workspaceId}`)
      .for('update');
    await tx
      .insert(settingsTable)
      .values({ workspaceId: ctx.workspaceId, searchLanguage })
      .onConflictDoUpdate({ target: settingsTable.workspaceId, set: { searchLanguage, updatedAt: new Date() } });
    if ((before?.language ?? DEFAULT_SEARCH_LANGUAGE) !== searchLanguage) {
      await ctx.jobs.send(tx, reindexWorkspace, { workspaceId: ctx.workspaceId });
    }
  });
  return getSettings(ctx);
}
