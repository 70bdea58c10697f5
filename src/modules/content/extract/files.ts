import { extname } from 'node:path';
import { extractText, getDocumentProxy, getMeta } from 'unpdf';
import { extractHtml } from './html.js';

export type FileFormat = 'markdown' | 'text' | 'html' | 'pdf';

export interface FileInput {
  fileName: string;
  /** A string is taken as the file's text; for a PDF it must hold one byte per character (latin1/"binary"). */
  content: Buffer | string;
  contentType?: string;
}

export interface ExtractedFile {
  title: string;
  content: string;
  format: FileFormat;
}

const EXTENSIONS: Record<string, FileFormat> = {
  '.md': 'markdown',
  '.markdown': 'markdown',
  '.txt': 'text',
  '.text': 'text',
  '.html': 'html',
  '.htm': 'html',
  '.pdf': 'pdf',
};

const CONTENT_TYPES: Record<string, FileFormat> = {
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'application/pdf': 'pdf',
};

export const ACCEPTED_FILE_EXTENSIONS = Object.keys(EXTENSIONS);

export class UnsupportedFileError extends Error {
  override name = 'UnsupportedFileError';
  constructor(fileName: string) {
    super(`Unsupported file type for "${fileName}": accepted types are ${ACCEPTED_FILE_EXTENSIONS.join(', ')}`);
  }
}

export class UnreadableFileError extends Error {
  override name = 'UnreadableFileError';
  constructor(fileName: string, reason: string) {
    super(`Cannot read "${fileName}": ${reason}`);
  }
}

export function detectFileFormat(fileName: string, contentType?: string): FileFormat | undefined {
  const mediaType = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
  return EXTENSIONS[extname(fileName).toLowerCase()] ?? CONTENT_TYPES[mediaType];
}

export async function extractFile(input: FileInput): Promise<ExtractedFile> {
  const format = detectFileFormat(input.fileName, input.contentType);
  if (!format) throw new UnsupportedFileError(input.fileName);
  const fallbackTitle = baseName(input.fileName);
  if (format === 'pdf') return { format, ...(await extractPdf(input, fallbackTitle)) };
  const text = normaliseText(decodeText(input.content));
  if (format === 'html') {
    const { title, content } = extractHtml(text);
    return { format, title: title || fallbackTitle, content };
  }
  const title = (format === 'markdown' && firstMarkdownHeading(text)) || fallbackTitle;
  return { format, title, content: text };
}

async function extractPdf(input: FileInput, fallbackTitle: string): Promise<{ title: string; content: string }> {
  const bytes = typeof input.content === 'string' ? Buffer.from(input.content, 'latin1') : input.content;
  const unreadable = (reason: string) => (error: unknown) => {
    throw new UnreadableFileError(input.fileName, `${reason} (${errorMessage(error)})`);
  };
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 }).catch(unreadable('not a valid PDF'));
  try {
    const { text: pages } = await extractText(pdf, { mergePages: false }).catch(unreadable('cannot extract its text'));
    const content = normaliseText(pages.map((page) => page.trim()).filter(Boolean).join('\n\n'));
    if (!content) throw new UnreadableFileError(input.fileName, 'the PDF contains no text');
    const metaTitle: unknown = (await getMeta(pdf).catch(() => undefined))?.info.Title;
    const title = typeof metaTitle === 'string' && metaTitle.trim() ? metaTitle.trim() : fallbackTitle;
    return { title, content };
  } finally {
    await pdf.destroy();
  }
}

function decodeText(content: Buffer | string): string {
  return typeof content === 'string' ? content : new TextDecoder().decode(content);
}

function normaliseText(text: string): string {
  return text.replace(/\r\n?/g, '\n').replaceAll('\0', '');
}

function firstMarkdownHeading(markdown: string): string | undefined {
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s{0,3}(```|~~~)/.test(line)) inFence = !inFence;
    const heading = !inFence && /^\s{0,3}#\s+(.+?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading) return heading;
  }
  return undefined;
}

function baseName(fileName: string): string {
  const name = fileName.split(/[\\/]/).pop() ?? fileName;
  return name.slice(0, name.length - extname(name).length) || name;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
