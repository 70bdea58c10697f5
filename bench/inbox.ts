// The inbox part of `npm run bench` (PostgreSQL only): first pages of GET /api/contacts and GET /api/conversations,
// with their exact totals, over a workspace of BENCH_CONTACTS (1,000,000) contacts and BENCH_CONVERSATIONS
// (100,000) conversations. The rows are seeded straight into the database with generate_series (through the API
// it would take hours); the counters the API keeps (contact_counts, conversation_counts) are set to match.
import autocannon from 'autocannon';
import pg from 'pg';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000);
const CONVERSATIONS = Number(process.env.BENCH_CONVERSATIONS ?? 100_000);
const SECONDS = Number(process.env.BENCH_SEARCH_SECONDS ?? 5);

export interface InboxFigures {
  contacts: number;
  conversations: number;
  seedSeconds: number;
  routes: { route: string; connections: number; reqPerSec: number; p50: number; p99: number; total: number }[];
}

async function seed(databaseUrl: string, workspaceId: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('begin');
    const channel = await client.query<{ id: string }>(
      `insert into channels (id, workspace_id, type, name, config) values (gen_random_uuid(), $1, 'whatsapp', 'Bench WhatsApp', '{}') returning id`,
      [workspaceId],
    );
    await client.query(
      `insert into contacts (id, workspace_id, name, phone, email, created_at, updated_at)
       select gen_random_uuid(), $1, 'Contact ' || n, '+4420' || lpad(n::text, 8, '0'), 'contact' || n || '@example.test',
              now() - (n || ' seconds')::interval, now()
       from generate_series(1, $2::int) n`,
      [workspaceId, CONTACTS],
    );
    await client.query(
      `insert into contact_counts (workspace_id, total) values ($1, (select count(*) from contacts where workspace_id = $1))
       on conflict (workspace_id) do update set total = excluded.total`,
      [workspaceId],
    );
    await client.query(
      `insert into conversations (id, workspace_id, channel_id, contact_id, status, last_message_at, last_inbound_at)
       select gen_random_uuid(), $1, $2, id, 'active', created_at, created_at
       from contacts where workspace_id = $1 order by created_at desc limit $3`,
      [workspaceId, channel.rows[0]!.id, CONVERSATIONS],
    );
    await client.query(
      `insert into conversation_counts (workspace_id, total) values ($1, (select count(*) from conversations where workspace_id = $1))
       on conflict (workspace_id) do update set total = excluded.total`,
      [workspaceId],
    );
    await client.query('commit');
    await client.query('analyze contacts; analyze conversations');
  } finally {
    await client.end();
  }
}

export async function benchInbox(base: string, headers: Record<string, string>, databaseUrl: string): Promise<InboxFigures> {
  const started = performance.now();
  await seed(databaseUrl, headers['x-workspace-id']!);
  const seedSeconds = (performance.now() - started) / 1000;
  const routes: InboxFigures['routes'] = [];
  for (const path of ['/api/contacts', '/api/conversations', `/api/contacts?q=${encodeURIComponent('contact12345')}`]) {
    const first = await fetch(base + path, { headers });
    if (first.status !== 200) throw new Error(`${path}: ${first.status} ${await first.text()}`);
    const total = (await first.json()).total as number;
    for (const connections of [1, 20]) {
      await autocannon({ url: base + path, headers, connections, duration: 1 });
      const r = await autocannon({ url: base + path, headers, connections, duration: SECONDS });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${path}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      routes.push({ route: `GET ${path}`, connections, reqPerSec: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, total });
    }
  }
  return { contacts: CONTACTS, conversations: CONVERSATIONS, seedSeconds, routes };
}

export function printInboxFigures(f: InboxFigures): void {
  console.log(`\ninbox: ${f.contacts} contacts and ${f.conversations} conversations seeded in ${f.seedSeconds.toFixed(1)} s`);
  console.log('route                                  total  conns    req/s  p50 ms  p99 ms');
  for (const r of f.routes) {
    console.log(
      `${r.route.padEnd(36)} ${String(r.total).padStart(8)}  ${String(r.connections).padStart(5)}  ${r.reqPerSec.toFixed(0).padStart(7)}  ${String(r.p50).padStart(6)}  ${String(r.p99).padStart(6)}`,
    );
  }
}
