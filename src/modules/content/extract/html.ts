import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';

export interface ExtractedHtml {
  title: string;
  content: string;
  links: string[];
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

const SKIPPED = new Set(['script', 'style', 'noscript', 'template', 'svg', 'iframe', 'object', 'canvas', 'button', 'select', 'textarea', 'head']);
const CHROME = 'script, style, noscript, template, nav';
const FALLBACK_REMOVED = `${CHROME}, header, footer`;
// Readability renames <h1> to <h2> but copies attributes, so the original level survives here.
const LEVEL_ATTRIBUTE = 'data-heading-level';
const HEAD_ONLY = new Set(['title', 'meta', 'link', 'base']);
const BLOCKS = new Set([
  'address', 'article', 'aside', 'body', 'dd', 'details', 'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer',
  'form', 'header', 'hr', 'html', 'li', 'main', 'nav', 'p', 'section', 'summary',
]);
const HEADING = /^h([1-6])$/;
// Stands for <br> while whitespace is collapsed (a NUL in the page itself merely becomes a line break).
const LINE_BREAK = '\u0000';

export function extractHtml(html: string, url?: string): ExtractedHtml {
  const document = parseDocument(html);
  const links = collectLinks(document, url);
  const fallbackTitle = documentTitle(document) || url || '';
  prepareForReadability(document);
  const article = new Readability(document, { serializer: (node) => node }).parse();
  const content = article?.content && article.textContent?.trim() ? toMarkdown(article.content) : fallbackContent(html);
  return { title: article?.title?.trim() || fallbackTitle, content, links };
}

/**
 * linkedom does not synthesise <html>/<head>/<body> the way browsers do: a fragment or a page
 * without <body> would leave Readability an empty body, and '' has no document element at all.
 */
function parseDocument(html: string): Document {
  const { document } = parseHTML(html);
  const root = document.documentElement;
  if (root?.localName === 'html' && [...root.children].some((child) => child.localName === 'body')) return document;
  const head: string[] = [];
  const body: string[] = [];
  const place = (node: Node): void => {
    if (node.nodeType === TEXT_NODE) body.push(escapeText(node.textContent ?? ''));
    if (node.nodeType !== ELEMENT_NODE) return;
    const element = node as Element;
    const tag = element.localName.toLowerCase();
    if (tag === 'html' || tag === 'head' || tag === 'body') element.childNodes.forEach(place);
    else (HEAD_ONLY.has(tag) ? head : body).push(element.outerHTML);
  };
  document.childNodes.forEach(place);
  return parseHTML(`<!doctype html><html><head>${head.join('')}</head><body>${body.join('')}</body></html>`).document;
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function prepareForReadability(document: Document): void {
  for (const element of document.querySelectorAll(`${CHROME}, body > header, body > footer`)) element.remove();
  for (const heading of document.querySelectorAll('h1, h2, h3, h4, h5, h6')) {
    heading.setAttribute(LEVEL_ATTRIBUTE, heading.localName.slice(1));
  }
}

function collectLinks(document: Document, url: string | undefined): string[] {
  const baseHref = document.querySelector('base[href]')?.getAttribute('href');
  const base = baseHref ? resolveUrl(baseHref, url) : url;
  const links = new Set<string>();
  for (const anchor of document.querySelectorAll('a[href]')) {
    const link = resolveUrl(anchor.getAttribute('href') ?? '', base);
    if (link) links.add(link);
  }
  return [...links];
}

function resolveUrl(href: string, base: string | undefined): string | undefined {
  try {
    const resolved = new URL(href.trim(), base);
    if (resolved.protocol !== 'http:' && resolved.protocol !== 'https:') return undefined;
    resolved.hash = '';
    return resolved.href;
  } catch {
    return undefined;
  }
}

function documentTitle(document: Document): string {
  return collapse(document.querySelector('title')?.textContent ?? '') || collapse(document.querySelector('h1')?.textContent ?? '');
}

function fallbackContent(html: string): string {
  const document = parseDocument(html);
  for (const element of document.querySelectorAll(FALLBACK_REMOVED)) element.remove();
  return toMarkdown(document.body);
}

/** Renders nodes as plain Markdown-ish text: headings, paragraphs, lists, code, tables. */
function toMarkdown(...nodes: Node[]): string {
  const blocks: string[] = [];
  let inline = '';
  const flush = () => {
    const text = collapseLines(inline);
    if (text) blocks.push(text);
    inline = '';
  };
  const walk = (node: Node): void => {
    if (node.nodeType === TEXT_NODE) {
      inline += node.textContent ?? '';
      return;
    }
    if (node.nodeType !== ELEMENT_NODE) return;
    const element = node as Element;
    const tag = element.localName.toLowerCase();
    if (SKIPPED.has(tag)) return;
    if (tag === 'br') inline += LINE_BREAK;
    else if (tag === 'code') inline += `\`${element.textContent ?? ''}\``;
    else if (BLOCKS.has(tag)) {
      flush();
      element.childNodes.forEach(walk);
      flush();
    } else if (isSpecialBlock(tag)) {
      flush();
      const block = renderSpecialBlock(element, tag);
      if (block) blocks.push(block);
    } else element.childNodes.forEach(walk);
  };
  nodes.forEach(walk);
  flush();
  return blocks.join('\n\n');
}

function isSpecialBlock(tag: string): boolean {
  return HEADING.test(tag) || ['pre', 'ul', 'ol', 'table', 'blockquote'].includes(tag);
}

function renderSpecialBlock(element: Element, tag: string): string {
  const level = element.getAttribute(LEVEL_ATTRIBUTE) ?? HEADING.exec(tag)?.[1];
  if (level) {
    const text = inlineText(element);
    return text && `${'#'.repeat(Math.min(Number(level), 3))} ${text}`;
  }
  if (tag === 'pre') return renderPre(element);
  if (tag === 'table') return renderTable(element);
  if (tag === 'blockquote') return prefixLines(toMarkdown(...element.childNodes), '> ');
  return renderList(element, 0);
}

function renderPre(element: Element): string {
  const code = (element.textContent ?? '').replace(/^\n+|\s+$/g, '');
  return code && `\`\`\`\n${code}\n\`\`\``;
}

function renderList(list: Element, depth: number): string {
  const lines: string[] = [];
  for (const item of list.children) {
    if (item.localName.toLowerCase() !== 'li') continue;
    const nodes = [...item.childNodes];
    const nested = nodes.filter(isList);
    const text = toMarkdown(...nodes.filter((node) => !isList(node))).replace(/\n+/g, ' ');
    if (text) lines.push(`${'  '.repeat(depth)}- ${text}`);
    for (const child of nested) {
      const rendered = renderList(child, depth + 1);
      if (rendered) lines.push(rendered);
    }
  }
  return lines.join('\n');
}

function isList(node: Node): node is Element {
  return node.nodeType === ELEMENT_NODE && ['ul', 'ol'].includes((node as Element).localName.toLowerCase());
}

function renderTable(table: Element): string {
  return [...table.querySelectorAll('tr')]
    .map((row) => [...row.querySelectorAll('th, td')].map(inlineText).join(' | '))
    .filter((row) => row.replace(/[\s|]/g, ''))
    .join('\n');
}

function inlineText(element: Element): string {
  return toMarkdown(...element.childNodes).replace(/\s+/g, ' ').trim();
}

function prefixLines(text: string, prefix: string): string {
  return text ? text.split('\n').map((line) => `${prefix}${line}`.trimEnd()).join('\n') : '';
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function collapseLines(text: string): string {
  return text
    .split(LINE_BREAK)
    .map(collapse)
    .filter(Boolean)
    .join('\n');
}
