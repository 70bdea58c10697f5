// Splits a document's text into search chunks: by headings first, then by paragraphs, each chunk at most
// MAX_CHUNK_CHARS long, so a hit points at the passage that matched and an AI answer can quote it.

export const MAX_CHUNK_CHARS = 1500;

export interface Chunk {
  /** The heading path the passage sits under, e.g. "Billing › Refunds"; null before the first heading. */
  heading: string | null;
  content: string;
}

interface Section {
  heading: string | null;
  paragraphs: string[];
}

const HEADING = /^(#{1,6})\s+(.+?)\s*#*\s*$/;

export function chunkText(text: string, maxChars = MAX_CHUNK_CHARS): Chunk[] {
  return splitSections(text).flatMap((section) =>
    packParagraphs(section.paragraphs, maxChars).map((content) => ({ heading: section.heading, content })),
  );
}

function splitSections(text: string): Section[] {
  const sections: Section[] = [];
  const path: string[] = [];
  let current: Section = { heading: null, paragraphs: [] };
  let paragraph: string[] = [];
  let inFence = false;
  const endParagraph = () => {
    const joined = paragraph.join('\n').trim();
    if (joined) current.paragraphs.push(joined);
    paragraph = [];
  };
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const heading = inFence ? null : HEADING.exec(line);
    if (heading) {
      endParagraph();
      if (current.paragraphs.length) sections.push(current);
      const level = heading[1]!.length;
      path.length = Math.min(path.length, level - 1);
      path[level - 1] = heading[2]!;
      current = { heading: path.filter(Boolean).join(' › '), paragraphs: [] };
    } else if (!inFence && line.trim() === '') {
      endParagraph();
    } else {
      paragraph.push(line);
    }
  }
  endParagraph();
  if (current.paragraphs.length) sections.push(current);
  return sections;
}

/** Greedily joins paragraphs up to maxChars; a longer paragraph is cut at sentence, then word boundaries. */
function packParagraphs(paragraphs: string[], maxChars: number): string[] {
  const chunks: string[] = [];
  let current = '';
  for (const piece of paragraphs.flatMap((p) => splitLong(p, maxChars))) {
    if (current && current.length + 2 + piece.length > maxChars) {
      chunks.push(current);
      current = piece;
    } else {
      current = current ? `${current}\n\n${piece}` : piece;
    }
  }
  if (current) chunks.push(current);
  return chunks;
}

function splitLong(paragraph: string, maxChars: number): string[] {
  if (paragraph.length <= maxChars) return [paragraph];
  const units = paragraph.match(/[^.!?\n]+[.!?]*\s*|\n/g) ?? [paragraph];
  const pieces: string[] = [];
  let current = '';
  for (const unit of units.flatMap((u) => (u.length > maxChars ? splitWords(u, maxChars) : [u]))) {
    if (current.length + unit.length > maxChars) {
      if (current.trim()) pieces.push(current.trim());
      current = unit;
    } else {
      current += unit;
    }
  }
  if (current.trim()) pieces.push(current.trim());
  return pieces;
}

function splitWords(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let current = '';
  for (const word of text.split(/(\s+)/)) {
    if (current.length + word.length > maxChars && current) {
      pieces.push(current);
      current = '';
    }
    // A single "word" longer than the limit (a URL, base64) is cut where it must be.
    for (let start = 0; start < word.length; start += maxChars) {
      const slice = word.slice(start, start + maxChars);
      if (current.length + slice.length > maxChars) {
        pieces.push(current);
        current = '';
      }
      current += slice;
    }
  }
  if (current) pieces.push(current);
  return pieces;
}
