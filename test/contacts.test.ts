// Contacts end to end: create (phone normalised to E.164 and unique, e-mail lower-cased, attributes), list (search,
// tag and group filters, exact totals), read, edit (attributes merged), delete, tags on a contact, CSV imports
// through the real queue; roles; and isolation between workspaces.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Client,
  createTestApp,
  eventually,
  expectForbidden,
  expectNotFound,
  expectValidation,
  ISO_TIMESTAMP,
  signUp,
  type TestApp,
  workspaceWithRoles,
} from './helpers.js';

let t: TestApp;
let cast: Awaited<ReturnType<typeof workspaceWithRoles>>;
beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_FACTOR: '10' });
  cast = await workspaceWithRoles(t.app);
});
afterAll(async () => t.close());

const CONTACTS = '/api/contacts';
let counter = 0;
/** A valid, distinct UK mobile number per call. */
const uniquePhone = () => `+447911${String(1_000_000 + ++counter).slice(-6)}`;

async function createContact(client: Client, body: Record<string, unknown> = {}) {
  const res = await client.post(CONTACTS, { name: `Contact ${++counter}`, ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createTag(client: Client, name = `Tag ${++counter}`) {
  const res = await client.post('/api/tags', { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function createGroup(client: Client, name = `Group ${++counter}`) {
  const res = await client.post('/api/groups', { name });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function importCsv(client: Client, csv: string, fileName?: string) {
  const res = await client.post(`${CONTACTS}/import`, fileName === undefined ? { csv } : { csv, fileName });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return eventually(async () => {
    const read = await client.get(`${CONTACTS}/imports/${res.body.id}`);
    return read.body.status === 'completed' || read.body.status === 'failed' ? read.body : undefined;
  }, 15_000, 'import finished');
}

describe('POST /api/contacts', () => {
  it('creates a contact: 201 with the record, phone in E.164, e-mail lower-cased; reads back the same', async () => {
    const { client } = await signUp(t.app);
    const tag = await createTag(client);
    const group = await createGroup(client);
    const res = await client.post(CONTACTS, {
      name: '  Ann Example ',
      phone: '+44 20 7946 0958',
      email: 'Ann@Example.COM',
      attributes: { plan: 'pro', seats: 3, vip: true, note: null },
      tagIds: [tag.id],
      groupIds: [group.id],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Ann Example',
      phone: '+442079460958',
      email: 'ann@example.com',
      attributes: { plan: 'pro', seats: 3, vip: true, note: null },
      tagIds: [tag.id],
      groupIds: [group.id],
      lastInboundAt: null,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      updatedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const read = await client.get(`${CONTACTS}/${res.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('takes a name alone: phone, e-mail null, no attributes, tags or groups', async () => {
    const contact = await createContact(cast.agent, { name: 'Just a name' });
    expect(contact).toMatchObject({ phone: null, email: null, attributes: {}, tagIds: [], groupIds: [] });
  });

  it('answers 409 with existingId for a phone the workspace has, in either spelling', async () => {
    const { client } = await signUp(t.app);
    const first = await createContact(client, { phone: '+442079460958' });
    for (const phone of ['+44 20 7946 0958', '+442079460958', '+44 (20) 7946-0958']) {
      const res = await client.post(CONTACTS, { name: 'Dup', phone });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.any(String), existingId: first.id });
    }
    // Another workspace may have the same number.
    const other = await signUp(t.app);
    await createContact(other.client, { phone: '+44 20 7946 0958' });
    expect((await client.get(CONTACTS)).body.total).toBe(1);
  });

  it('answers 409 with existingId to concurrent creates of one phone: exactly one wins', async () => {
    const { client } = await signUp(t.app);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => client.post(CONTACTS, { name: `Racer ${i}`, phone: '+1 202 555 0143' })),
    );
    const created = results.filter((res) => res.status === 201);
    expect(created).toHaveLength(1);
    for (const res of results.filter((r) => r.status !== 201)) {
      expect(res.status).toBe(409);
      expect(res.body.existingId).toBe(created[0]!.body.id);
    }
    expect((await client.get(CONTACTS)).body.total).toBe(1);
  });

  it.each([
    [{ phone: '020 7946 0958' }, 'phone'],
    [{ phone: '+44 12' }, 'phone'],
    [{ phone: 'not a phone' }, 'phone'],
    [{ email: 'not-an-email' }, 'email'],
    [{ name: '' }, 'name'],
    [{ name: '   ' }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ nickname: 'Al' }, 'nickname'],
    [{ attributes: { nested: { a: 1 } } }, 'attributes.nested'],
    [{ attributes: { ['k'.repeat(65)]: 1 } }, 'attributes'],
    [{ attributes: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }, 'attributes'],
    [{ tagIds: ['nope'] }, 'tagIds.0'],
  ])('answers 400 for %j naming %s', async (body, path) => {
    const res = await cast.agent.post(CONTACTS, { name: 'Valid', ...body });
    if (path === 'attributes') {
      expect(res.status).toBe(400);
      expect(res.body.details.some((d: { path: string }) => d.path.startsWith('attributes'))).toBe(true);
    } else {
      expectValidation(res, path);
    }
  });

  it('answers 400 naming tagIds.N and groupIds.N for ids of another workspace or unknown', async () => {
    const foreignTag = await createTag(cast.outsider);
    const foreignGroup = await createGroup(cast.outsider);
    const ownTag = await createTag(cast.owner);
    const res = await cast.agent.post(CONTACTS, {
      name: 'Foreign',
      tagIds: [ownTag.id, foreignTag.id, randomUUID()],
    });
    expectValidation(res, 'tagIds.1');
    expectValidation(res, 'tagIds.2');
    expect(res.body.details.some((d: { path: string }) => d.path === 'tagIds.0')).toBe(false);
    expectValidation(await cast.agent.post(CONTACTS, { name: 'Foreign', groupIds: [foreignGroup.id] }), 'groupIds.0');
  });

  it('lets Agents, Admins and Org Owners create; Viewers get 403; no session 401; no workspace header 400/403', async () => {
    for (const client of [cast.agent, cast.admin, cast.owner]) await createContact(client);
    expectForbidden(await cast.viewer.post(CONTACTS, { name: 'No' }));
    const anonymous = await cast.agent.post(CONTACTS, { name: 'No' }, { anonymous: true });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'Unauthorized' });
  });

  it('answers 415 to a non-JSON body', async () => {
    const res = await cast.agent.post(CONTACTS, 'name=x', { headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
  });
});

describe('GET /api/contacts', () => {
  it('pages newest first with an exact total that follows creates and deletes', async () => {
    const { client } = await signUp(t.app);
    expect((await client.get(CONTACTS)).body).toEqual({ items: [], total: 0 });
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await createContact(client, { name: `Person ${i}` }));
    const first = await client.get(`${CONTACTS}?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(5);
    expect(first.body.items.map((c: { id: string }) => c.id)).toEqual([made[4].id, made[3].id]);
    const last = await client.get(`${CONTACTS}?limit=2&offset=4`);
    expect(last.body.items.map((c: { id: string }) => c.id)).toEqual([made[0].id]);
    expect(last.body.total).toBe(5);
    expect((await client.get(`${CONTACTS}?offset=10`)).body).toEqual({ items: [], total: 5 });
    expect((await client.delete(`${CONTACTS}/${made[2].id}`)).status).toBe(204);
    expect((await client.get(CONTACTS)).body.total).toBe(4);
  });

  it('searches name, phone and e-mail case-insensitively; % and _ are literal', async () => {
    const { client } = await signUp(t.app);
    const ann = await createContact(client, { name: 'Ann Zebra', phone: '+44 20 7946 0958', email: 'ann@alpha.test' });
    const bob = await createContact(client, { name: 'Bob 100% Sure', email: 'bob_b@beta.test' });
    await createContact(client, { name: 'Carl', email: 'carl@gamma.test' });
    const ids = async (q: string) => {
      const res = await client.get(`${CONTACTS}?q=${encodeURIComponent(q)}`);
      expect(res.status).toBe(200);
      expect(res.body.total).toBe(res.body.items.length);
      return res.body.items.map((c: { id: string }) => c.id);
    };
    expect(await ids('zebra')).toEqual([ann.id]);
    expect(await ids('7946')).toEqual([ann.id]);
    expect(await ids('ALPHA.TEST')).toEqual([ann.id]);
    expect(await ids('100%')).toEqual([bob.id]);
    expect(await ids('b_b')).toEqual([bob.id]);
    expect(await ids('_')).toEqual([bob.id]);
    expect(await ids('%')).toEqual([bob.id]);
    expect(await ids('nobody')).toEqual([]);
  });

  it('counts the filtered set beyond one page', async () => {
    const { client } = await signUp(t.app);
    for (let i = 0; i < 4; i++) await createContact(client, { name: `Match ${i}` });
    await createContact(client, { name: 'Other' });
    const res = await client.get(`${CONTACTS}?q=match&limit=2&offset=2`);
    expect(res.body.items).toHaveLength(2);
    expect(res.body.total).toBe(4);
  });

  it('filters by tagId and groupId, and answers tagIds and groupIds for each contact', async () => {
    const { client } = await signUp(t.app);
    const vip = await createTag(client, 'VIP');
    const lead = await createTag(client, 'Lead');
    const group = await createGroup(client);
    const a = await createContact(client, { tagIds: [vip.id, lead.id], groupIds: [group.id] });
    const b = await createContact(client, { tagIds: [lead.id] });
    await createContact(client);
    const byVip = await client.get(`${CONTACTS}?tagId=${vip.id}`);
    expect(byVip.body).toEqual({ items: [a], total: 1 });
    const byLead = await client.get(`${CONTACTS}?tagId=${lead.id}`);
    expect(byLead.body.items.map((c: { id: string }) => c.id)).toEqual([b.id, a.id]);
    expect(byLead.body.total).toBe(2);
    expect((await client.get(`${CONTACTS}?groupId=${group.id}`)).body).toEqual({ items: [a], total: 1 });
    expect((await client.get(`${CONTACTS}?groupId=${group.id}&tagId=${lead.id}`)).body.total).toBe(1);
    // Another workspace's tag finds nothing here.
    const foreign = await createTag(cast.outsider);
    expect((await client.get(`${CONTACTS}?tagId=${foreign.id}`)).body).toEqual({ items: [], total: 0 });
  });

  it.each([
    ['limit=101', 'limit'],
    ['limit=0', 'limit'],
    ['offset=-1', 'offset'],
    ['tagId=nope', 'tagId'],
    ['groupId=nope', 'groupId'],
  ])('answers 400 for ?%s', async (query, path) => {
    expectValidation(await cast.viewer.get(`${CONTACTS}?${query}`), path);
  });

  it('is readable by Viewers; 401 without a session', async () => {
    expect((await cast.viewer.get(CONTACTS)).status).toBe(200);
    expect((await cast.viewer.get(CONTACTS, { anonymous: true })).status).toBe(401);
  });
});

describe('GET, PATCH, DELETE /api/contacts/{contactId}', () => {
  it('edits any field; attributes merge key by key with null deleting; tagIds and groupIds replace', async () => {
    const { client } = await signUp(t.app);
    const [t1, t2] = [await createTag(client), await createTag(client)];
    const [g1, g2] = [await createGroup(client), await createGroup(client)];
    const contact = await createContact(client, {
      phone: uniquePhone(),
      email: 'old@example.com',
      attributes: { plan: 'free', seats: 1, keep: 'yes' },
      tagIds: [t1.id],
      groupIds: [g1.id],
    });
    const res = await client.patch(`${CONTACTS}/${contact.id}`, {
      name: 'Renamed',
      phone: '+1 (202) 555-0199',
      email: 'NEW@Example.com',
      attributes: { plan: 'pro', seats: null, added: false },
      tagIds: [t2.id],
      groupIds: [g2.id, g1.id],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      id: contact.id,
      name: 'Renamed',
      phone: '+12025550199',
      email: 'new@example.com',
      attributes: { plan: 'pro', keep: 'yes', added: false },
      tagIds: [t2.id],
      createdAt: contact.createdAt,
    });
    expect(res.body.groupIds.sort()).toEqual([g1.id, g2.id].sort());
    expect(res.body.attributes).not.toHaveProperty('seats');
    expect((await client.get(`${CONTACTS}/${contact.id}`)).body).toEqual(res.body);
    // Clearing phone and e-mail, emptying tags.
    const cleared = await client.patch(`${CONTACTS}/${contact.id}`, { phone: null, email: null, tagIds: [] });
    expect(cleared.body).toMatchObject({ phone: null, email: null, tagIds: [] });
  });

  it('answers 409 with existingId when the new phone is another contact’s; keeping its own phone is fine', async () => {
    const { client } = await signUp(t.app);
    const a = await createContact(client, { phone: '+442079460958' });
    const b = await createContact(client, { phone: uniquePhone() });
    const res = await client.patch(`${CONTACTS}/${b.id}`, { phone: '+44 20 7946 0958' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: expect.any(String), existingId: a.id });
    expect((await client.patch(`${CONTACTS}/${a.id}`, { phone: '+44 20 7946 0958' })).status).toBe(200);
  });

  it.each([
    [{}, ''],
    [{ phone: '12345' }, 'phone'],
    [{ email: 'x@' }, 'email'],
    [{ unknown: 1 }, 'unknown'],
    [{ tagIds: [randomUUID()] }, 'tagIds.0'],
    [{ groupIds: [randomUUID()] }, 'groupIds.0'],
  ])('answers 400 to %j naming "%s"', async (body, path) => {
    const contact = await createContact(cast.agent);
    expectValidation(await cast.agent.patch(`${CONTACTS}/${contact.id}`, body), path);
  });

  it('answers 400 when the merge would leave more than 50 attributes', async () => {
    const full = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    const contact = await createContact(cast.agent, { attributes: full });
    expectValidation(await cast.agent.patch(`${CONTACTS}/${contact.id}`, { attributes: { extra: 1 } }), 'attributes');
    const swapped = await cast.agent.patch(`${CONTACTS}/${contact.id}`, { attributes: { k0: null, extra: 1 } });
    expect(swapped.status).toBe(200);
    expect(Object.keys(swapped.body.attributes)).toHaveLength(50);
  });

  it('deletes: 204, then 404; the total follows', async () => {
    const { client } = await signUp(t.app);
    const contact = await createContact(client);
    expect((await client.get(CONTACTS)).body.total).toBe(1);
    const res = await client.delete(`${CONTACTS}/${contact.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expectNotFound(await client.get(`${CONTACTS}/${contact.id}`));
    expectNotFound(await client.delete(`${CONTACTS}/${contact.id}`));
    expect((await client.get(CONTACTS)).body.total).toBe(0);
  });

  it('lets Agents edit and delete; Viewers get 403 on every write', async () => {
    const contact = await createContact(cast.owner);
    const tag = await createTag(cast.owner);
    expectForbidden(await cast.viewer.patch(`${CONTACTS}/${contact.id}`, { name: 'No' }));
    expectForbidden(await cast.viewer.delete(`${CONTACTS}/${contact.id}`));
    expectForbidden(await cast.viewer.post(`${CONTACTS}/${contact.id}/tags`, { tagIds: [tag.id] }));
    expectForbidden(await cast.viewer.delete(`${CONTACTS}/${contact.id}/tags/${tag.id}`));
    expectForbidden(await cast.viewer.post(`${CONTACTS}/import`, { csv: 'name\nA' }));
    expect((await cast.viewer.get(`${CONTACTS}/${contact.id}`)).status).toBe(200);
    expect((await cast.agent.patch(`${CONTACTS}/${contact.id}`, { name: 'Agent edit' })).status).toBe(200);
    expect((await cast.agent.delete(`${CONTACTS}/${contact.id}`)).status).toBe(204);
  });

  it('answers 404 for another workspace’s contact on every route, exactly as for an unknown id', async () => {
    const foreign = await createContact(cast.outsider, { phone: uniquePhone() });
    const tag = await createTag(cast.owner);
    for (const id of [foreign.id, randomUUID()]) {
      expectNotFound(await cast.owner.get(`${CONTACTS}/${id}`));
      expectNotFound(await cast.owner.patch(`${CONTACTS}/${id}`, { name: 'Mine now' }));
      expectNotFound(await cast.owner.delete(`${CONTACTS}/${id}`));
      expectNotFound(await cast.owner.post(`${CONTACTS}/${id}/tags`, { tagIds: [tag.id] }));
      expectNotFound(await cast.owner.delete(`${CONTACTS}/${id}/tags/${tag.id}`));
    }
    expect((await cast.outsider.get(`${CONTACTS}/${foreign.id}`)).body.name).toBe(foreign.name);
    expectValidation(await cast.owner.get(`${CONTACTS}/not-a-uuid`), 'contactId');
  });
});

describe('tags on a contact', () => {
  it('adds tags (ignoring ones it has) and removes one; the tag counts follow', async () => {
    const { client } = await signUp(t.app);
    const [a, b] = [await createTag(client), await createTag(client)];
    const contact = await createContact(client, { tagIds: [a.id] });
    const added = await client.post(`${CONTACTS}/${contact.id}/tags`, { tagIds: [a.id, b.id, b.id] });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    expect(added.body.tagIds).toEqual([a.id, b.id]);
    expect((await client.get(`/api/tags/${b.id}`)).body.contactCount).toBe(1);
    expect((await client.delete(`${CONTACTS}/${contact.id}/tags/${a.id}`)).status).toBe(204);
    expect((await client.delete(`${CONTACTS}/${contact.id}/tags/${a.id}`)).status).toBe(204);
    expect((await client.get(`${CONTACTS}/${contact.id}`)).body.tagIds).toEqual([b.id]);
  });

  it('answers 400 naming tagIds.N for another workspace’s tag, 404 when removing one', async () => {
    const contact = await createContact(cast.agent);
    const foreign = await createTag(cast.outsider);
    expectValidation(await cast.agent.post(`${CONTACTS}/${contact.id}/tags`, { tagIds: [foreign.id] }), 'tagIds.0');
    expectValidation(await cast.agent.post(`${CONTACTS}/${contact.id}/tags`, { tagIds: [] }), 'tagIds');
    expectNotFound(await cast.agent.delete(`${CONTACTS}/${contact.id}/tags/${foreign.id}`));
  });
});

describe('POST /api/contacts/import', () => {
  it('creates, updates (by phone, then e-mail) and rejects rows with reasons, through the queue', async () => {
    const { client } = await signUp(t.app);
    const byPhone = await createContact(client, { name: 'Old Name', phone: '+442079460958', attributes: { keep: 1 } });
    const byEmail = await createContact(client, { name: 'Mail Match', email: 'match@example.com' });
    const csv = [
      'Name,Phone,Email,Plan,Empty',
      'New Name,+44 20 7946 0958,,gold,', // 1: updated by phone
      'Mail Person,,MATCH@example.com,silver,', // 2: updated by e-mail
      'Fresh One,+1 202 555 0143,fresh@example.com,bronze,', // 3: created
      ',+1 202 555 0144,,,', // 4: no name
      'Bad Phone,12345,,,', // 5: invalid phone
      'Bad Mail,,not-mail,,', // 6: invalid e-mail
      '"Quoted, Name",+12025550143,,platinum,', // 7: updates row 3's contact
      'No Contact Info,,,,', // 8: created
    ].join('\n');
    const done = await importCsv(client, csv, 'people.csv');
    expect(done).toEqual({
      id: expect.any(String),
      status: 'completed',
      fileName: 'people.csv',
      result: {
        created: 2,
        updated: 3,
        rejected: [
          { row: 4, reason: expect.stringMatching(/name/i) },
          { row: 5, reason: expect.stringMatching(/phone/i) },
          { row: 6, reason: expect.stringMatching(/e-mail/i) },
        ],
      },
      error: null,
      createdAt: expect.stringMatching(ISO_TIMESTAMP),
      completedAt: expect.stringMatching(ISO_TIMESTAMP),
    });
    const phoneMatched = (await client.get(`${CONTACTS}/${byPhone.id}`)).body;
    expect(phoneMatched).toMatchObject({ name: 'New Name', attributes: { keep: 1, Plan: 'gold' } });
    const emailMatched = (await client.get(`${CONTACTS}/${byEmail.id}`)).body;
    expect(emailMatched).toMatchObject({ name: 'Mail Person', email: 'match@example.com', attributes: { Plan: 'silver' } });
    const list = await client.get(`${CONTACTS}?limit=100`);
    expect(list.body.total).toBe(4);
    expect(list.body.items).toHaveLength(4);
    const fresh = (await client.get(`${CONTACTS}?q=${encodeURIComponent('+12025550143')}`)).body.items;
    expect(fresh).toHaveLength(1);
    expect(fresh[0]).toMatchObject({ name: 'Quoted, Name', email: 'fresh@example.com', attributes: { Plan: 'platinum' } });
  });

  it('takes a text/csv body; a rerun of a completed import changes nothing', async () => {
    const { client } = await signUp(t.app);
    const res = await client.post(`${CONTACTS}/import`, 'name,email\nTextCsv,text@example.com\n', {
      headers: { 'content-type': 'text/csv' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: 'queued', result: null, completedAt: null, fileName: null });
    const done = await eventually(async () => {
      const read = await client.get(`${CONTACTS}/imports/${res.body.id}`);
      return read.body.status === 'completed' ? read.body : undefined;
    });
    expect(done.result).toEqual({ created: 1, updated: 0, rejected: [] });
    const { runImport } = await import('../src/modules/contacts/imports.js');
    await runImport(t.app.services.database.db, { workspaceId: client.workspaceId!, importId: res.body.id });
    expect((await client.get(`${CONTACTS}/imports/${res.body.id}`)).body).toEqual(done);
    expect((await client.get(CONTACTS)).body.total).toBe(1);
  });

  it('resumes a partly processed import where it stopped (a rerun after a crash)', async () => {
    const { client } = await signUp(t.app);
    const { contactImports } = await import('../src/db/schema/index.js');
    const { runImport } = await import('../src/modules/contacts/imports.js');
    const id = randomUUID();
    // As a run killed after its first batch leaves it: row 1 applied and recorded, row 2 not yet.
    await createContact(client, { name: 'Row One', email: 'one@example.com' });
    await t.app.services.database.db.insert(contactImports).values({
      id,
      workspaceId: client.workspaceId!,
      status: 'running',
      csv: 'name,email\nRow One,one@example.com\nRow Two,two@example.com',
      result: { processed: 1, created: 1, updated: 0, rejected: [] },
    });
    await runImport(t.app.services.database.db, { workspaceId: client.workspaceId!, importId: id });
    const done = (await client.get(`${CONTACTS}/imports/${id}`)).body;
    expect(done).toMatchObject({ status: 'completed', result: { created: 2, updated: 0, rejected: [] } });
    expect((await client.get(CONTACTS)).body.total).toBe(2);
  });

  it('imports more rows than one batch with an exact total', async () => {
    const { client } = await signUp(t.app);
    const rows = Array.from({ length: 1203 }, (_, i) => `Bulk ${i},bulk${i}@example.com`);
    const done = await importCsv(client, ['name,email', ...rows].join('\n'));
    expect(done.result).toEqual({ created: 1203, updated: 0, rejected: [] });
    expect((await client.get(CONTACTS)).body.total).toBe(1203);
    expect((await client.get(`${CONTACTS}?q=bulk1202`)).body.total).toBe(1);
  });

  it('fails an import whose header has no name column, or that is not CSV', async () => {
    const { client } = await signUp(t.app);
    const noName = await importCsv(client, 'phone,email\n+442079460958,a@b.test');
    expect(noName).toMatchObject({ status: 'failed', result: null, error: expect.stringMatching(/name/) });
    const broken = await importCsv(client, 'name,email\n"unterminated,a@b.test');
    expect(broken).toMatchObject({ status: 'failed', error: expect.stringMatching(/CSV/) });
    expect((await client.get(CONTACTS)).body.total).toBe(0);
  });

  it('answers 400 to a bad body, 415 to other media types, 404 for another workspace’s import', async () => {
    expectValidation(await cast.agent.post(`${CONTACTS}/import`, {}), 'csv');
    expectValidation(await cast.agent.post(`${CONTACTS}/import`, { csv: 'name\nA', extra: 1 }), 'extra');
    const plain = await cast.agent.post(`${CONTACTS}/import`, 'name\nA', { headers: { 'content-type': 'text/plain' } });
    expect(plain.status).toBe(415);
    // text/csv is read by the import route only.
    const elsewhere = await cast.agent.post(CONTACTS, 'name\nA', { headers: { 'content-type': 'text/csv' } });
    expect(elsewhere.status).toBe(415);
    const foreign = await cast.outsider.post(`${CONTACTS}/import`, { csv: 'name\nA' });
    expect(foreign.status).toBe(202);
    expectNotFound(await cast.owner.get(`${CONTACTS}/imports/${foreign.body.id}`));
    expectNotFound(await cast.owner.get(`${CONTACTS}/imports/${randomUUID()}`));
    expect((await cast.viewer.get(`${CONTACTS}/imports/${foreign.body.id}`, { workspace: null })).status).not.toBe(200);
  });

  it('answers 400 to a CSV over 5 MiB and 413 to a body over 6 MiB', async () => {
    const big = `name\n${'x'.repeat(5 * 1024 * 1024)}`;
    expectValidation(await cast.agent.post(`${CONTACTS}/import`, { csv: big }), 'csv');
    const huge = await cast.agent.post(`${CONTACTS}/import`, `name\n${'x'.repeat(6 * 1024 * 1024)}`, {
      headers: { 'content-type': 'text/csv' },
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toEqual({ error: 'Request body is larger than 6 MiB' });
  });

  it('lets Agents import', async () => {
    const res = await cast.agent.post(`${CONTACTS}/import`, { csv: 'name\nAgent Import' });
    expect(res.status).toBe(202);
    expect((await cast.viewer.get(`${CONTACTS}/imports/${res.body.id}`)).status).toBe(200);
  });
});
