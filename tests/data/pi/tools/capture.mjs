#!/usr/bin/env node
/*
 * capture.mjs — record what pi 0.73.1's own built-in file tools (read, write, edit, ls) return for a fixed set
 * of cases, for pitrio's tests (tests/tools/builtin/test_pi_captures.py).
 *
 * How to run (node >= 20; pi's packages are resolved from node_modules above the current directory):
 *   cd /work/pi && node /work/main/tests/data/pi/tools/capture.mjs /work/main/tests/data/pi/tools
 *
 * Output: tools.json = {piVersion, root, tools: {name: {name, label, description, parameters}}, cases: [...]}
 * Each case: {name, tool, setup, args, prepared?, result | error, after?}
 *   setup    files to create under a fresh root directory before the call (see makeFile for the kinds)
 *   args     the arguments given to tool.execute (after tool.prepareArguments when `prepare` is set)
 *   result   {content, details} as JSON.stringify makes them; error: the thrown Error's message
 *   after    for write/edit: the files' bytes afterwards (base64), to compare what was written
 * Absolute paths under the root are written as "$ROOT"; strings over 4096 characters (code points) are written as
 * {$summary: {sha256 (of the UTF-8), chars, head, tail (100 characters each)}}. Every case starts from an empty root, the tools run
 * one at a time, image bytes are made by Photon from fixed pixels, so the output is the same on every run.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

function findPackageDir(name) {
	let dir = process.cwd();
	while (true) {
		const candidate = path.join(dir, "node_modules", ...name.split("/"));
		if (fs.existsSync(path.join(candidate, "package.json"))) return candidate;
		const parent = path.dirname(dir);
		if (parent === dir) throw new Error(`cannot find ${name} in node_modules above ${process.cwd()}`);
		dir = parent;
	}
}
const piDir = findPackageDir("@mariozechner/pi-coding-agent");
const piVersion = JSON.parse(fs.readFileSync(path.join(piDir, "package.json"), "utf8")).version;
const tools = await import(pathToFileURL(path.join(piDir, "dist/core/tools/index.js")).href);
const photon = createRequire(path.join(piDir, "package.json"))("@silvia-odwyer/photon-node");

const outDir = path.resolve(process.argv[2] ?? ".");
const ROOT = path.join(os.tmpdir(), "pitrio-tools-capture");

// ---------------------------------------------------------------------------------------------
// Deterministic image bytes: a gradient drawn into RGBA pixels, encoded by Photon.
function gradient(width, height) {
	const pixels = new Uint8Array(width * height * 4);
	for (let y = 0; y < height; y++) {
		for (let x = 0; x < width; x++) {
			const i = (y * width + x) * 4;
			pixels[i] = (x * 7) & 255;
			pixels[i + 1] = (y * 13) & 255;
			pixels[i + 2] = ((x + y) * 3) & 255;
			pixels[i + 3] = 255;
		}
	}
	return new photon.PhotonImage(pixels, width, height);
}
function encode(width, height, format) {
	const img = gradient(width, height);
	try {
		const bytes = format === "png" ? img.get_bytes() : format === "jpeg" ? img.get_bytes_jpeg(80) : img.get_bytes_webp();
		return Buffer.from(bytes).toString("base64");
	} finally {
		img.free();
	}
}
// Large images are not stored in tools.json: a setup {path, image: {width, height, format, pattern}} names pixels that
// both this script and the Python test compute (and each encodes with its own library; PNG is lossless, so the decoded
// pixels are the same):
//   gradient  the pixels of gradient() above
//   noise     RGB bytes from SHAKE-256 of "pitrio-noise" (width * height * 3 bytes, row by row), alpha 255
// and, with exifOrientation (JPEG only), an EXIF APP1 segment holding just that orientation right after the SOI marker.
function noise(width, height) {
	const rgb = createHash("shake256", { outputLength: width * height * 3 }).update("pitrio-noise").digest();
	const pixels = new Uint8Array(width * height * 4);
	for (let p = 0; p < width * height; p++) {
		pixels[p * 4] = rgb[p * 3];
		pixels[p * 4 + 1] = rgb[p * 3 + 1];
		pixels[p * 4 + 2] = rgb[p * 3 + 2];
		pixels[p * 4 + 3] = 255;
	}
	return new photon.PhotonImage(pixels, width, height);
}
function exifSegment(orientation) {
	// "Exif\0\0", a big-endian TIFF header, one IFD with one SHORT entry (tag 0x0112), no next IFD.
	const body = Buffer.from([0x45, 0x78, 0x69, 0x66, 0, 0, 0x4d, 0x4d, 0, 0x2a, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0, 0, 0, 0, 0]);
	return Buffer.concat([Buffer.from([0xff, 0xe1, 0, body.length + 2]), body]);
}
function generatedImage({ width, height, format, pattern, exifOrientation }) {
	const img = pattern === "noise" ? noise(width, height) : gradient(width, height);
	try {
		const bytes = Buffer.from(format === "png" ? img.get_bytes() : img.get_bytes_jpeg(80));
		if (!exifOrientation) return bytes;
		return Buffer.concat([bytes.subarray(0, 2), exifSegment(exifOrientation), bytes.subarray(2)]);
	} finally {
		img.free();
	}
}
// A 1x1 GIF (GIF89a, one black pixel).
const GIF_1X1 = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==";

// ---------------------------------------------------------------------------------------------
// File kinds of `setup` (the Python test creates them the same way):
//   {path, text}                         UTF-8 text
//   {path, base64}                       raw bytes
//   {path, lines: {prefix, count, suffix?, trailing?}}  lines `${prefix}${i}${suffix}` for i = 1..count,
//                                         joined by "\n", with a final "\n" when trailing
//   {path, repeat: {unit, count}}         unit repeated count times
//   {path, concat: [kind, ...]}           the bytes of several of the kinds above, one after the other
//   {path, image: {width, height, format, pattern}}  a generated image (see generatedImage)
//   {path, dir: true}                     a directory
//   {path, symlink}                       a symbolic link to `symlink`
//   {path, many: {prefix, count, pad}}    a directory holding empty files prefix + zero-padded i, i = 0..count-1
function fileText(spec) {
	if (spec.text !== undefined) return Buffer.from(spec.text, "utf-8");
	if (spec.base64 !== undefined) return Buffer.from(spec.base64, "base64");
	if (spec.lines) {
		const { prefix, count, suffix = "", trailing = false } = spec.lines;
		const lines = [];
		for (let i = 1; i <= count; i++) lines.push(`${prefix}${i}${suffix}`);
		return Buffer.from(lines.join("\n") + (trailing ? "\n" : ""), "utf-8");
	}
	if (spec.repeat) return Buffer.from(spec.repeat.unit.repeat(spec.repeat.count), "utf-8");
	if (spec.concat) return Buffer.concat(spec.concat.map(fileText));
	if (spec.image) return generatedImage(spec.image);
	throw new Error(`unknown file kind: ${JSON.stringify(spec)}`);
}
function makeFile(spec) {
	const target = path.join(ROOT, spec.path);
	fs.mkdirSync(path.dirname(target), { recursive: true });
	if (spec.dir) return void fs.mkdirSync(target, { recursive: true });
	if (spec.symlink !== undefined) return void fs.symlinkSync(spec.symlink, target);
	if (spec.many) {
		fs.mkdirSync(target, { recursive: true });
		for (let i = 0; i < spec.many.count; i++) {
			fs.writeFileSync(path.join(target, spec.many.prefix + String(i).padStart(spec.many.pad, "0")), "");
		}
		return;
	}
	fs.writeFileSync(target, fileText(spec));
}

// ---------------------------------------------------------------------------------------------
const longLine = (n) => ({ repeat: { unit: "a", count: n } });
const hundred = "x".repeat(90);
// Cases whose image pi rescales: pitrio rescales with Pillow, not Photon, so the image bytes differ;
// tests/tools/builtin/test_image_resize.py compares the size, type and note instead.
const RESIZED = "resized with Pillow, not Photon: compared by size, type and note";
const cases = [
	// read: text
	{ name: "read_small", tool: "read", setup: [{ path: "a.txt", text: "hello\nworld\n" }], args: { path: "a.txt" } },
	{ name: "read_absolute", tool: "read", setup: [{ path: "a.txt", text: "abs" }], args: { path: "$ROOT/a.txt" } },
	{ name: "read_at_prefix", tool: "read", setup: [{ path: "a.txt", text: "at" }], args: { path: "@a.txt" } },
	{ name: "read_empty", tool: "read", setup: [{ path: "e.txt", text: "" }], args: { path: "e.txt" } },
	{ name: "read_offset_limit", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 20 } }], args: { path: "n.txt", offset: 5, limit: 3 } },
	{ name: "read_offset_to_end", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 20, trailing: true } }], args: { path: "n.txt", offset: 18 } },
	{ name: "read_limit_past_end", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 5 } }], args: { path: "n.txt", offset: 4, limit: 10 } },
	{ name: "read_limit_zero", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 5 } }], args: { path: "n.txt", limit: 0 } },
	{ name: "read_offset_zero", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 3 } }], args: { path: "n.txt", offset: 0 } },
	{ name: "read_offset_beyond_end", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 5 } }], args: { path: "n.txt", offset: 10 } },
	{ name: "read_offset_just_beyond", tool: "read", setup: [{ path: "n.txt", lines: { prefix: "line ", count: 5, trailing: true } }], args: { path: "n.txt", offset: 7 } },
	{ name: "read_huge_lines", tool: "read", setup: [{ path: "big.txt", lines: { prefix: "line ", count: 3000, trailing: true } }], args: { path: "big.txt" } },
	{ name: "read_huge_lines_offset", tool: "read", setup: [{ path: "big.txt", lines: { prefix: "line ", count: 3000, trailing: true } }], args: { path: "big.txt", offset: 2001 } },
	{ name: "read_huge_bytes", tool: "read", setup: [{ path: "wide.txt", lines: { prefix: "row ", suffix: ` ${hundred}`, count: 1000 } }], args: { path: "wide.txt" } },
	{ name: "read_huge_bytes_limit", tool: "read", setup: [{ path: "wide.txt", lines: { prefix: "row ", suffix: ` ${hundred}`, count: 1000 } }], args: { path: "wide.txt", offset: 100, limit: 700 } },
	{ name: "read_long_first_line", tool: "read", setup: [{ path: "long.txt", ...longLine(60000) }], args: { path: "long.txt" } },
	{ name: "read_long_line_at_offset", tool: "read", setup: [{ path: "mix.txt", concat: [{ text: "short\n" }, { repeat: { unit: "b", count: 2000000 } }, { text: "\nend\n" }] }], args: { path: "mix.txt", offset: 2 } },
	{ name: "read_multibyte_bytes", tool: "read", setup: [{ path: "u.txt", lines: { prefix: "é€😀 ", suffix: " ".padEnd(40, "ü"), count: 900 } }], args: { path: "u.txt" } },
	{ name: "read_crlf", tool: "read", setup: [{ path: "c.txt", text: "one\r\ntwo\r\nthree\r\n" }], args: { path: "c.txt" } },
	{ name: "read_bom", tool: "read", setup: [{ path: "b.txt", text: "\uFEFFbom first\nsecond" }], args: { path: "b.txt" } },
	{ name: "read_binary", tool: "read", setup: [{ path: "bin.dat", base64: Buffer.from([...Array(256).keys(), 0xc3, 0x28, 0xe2, 0x82, 0xf0, 0x9f, 0x98, 0x0a, 0xff, 0xfe, 0x00]).toString("base64") }], args: { path: "bin.dat" } },
	{ name: "read_missing", tool: "read", setup: [], args: { path: "nope.txt" } },
	{ name: "read_missing_nested", tool: "read", setup: [], args: { path: "no/such/dir/file.txt" } },
	{ name: "read_directory", tool: "read", setup: [{ path: "sub", dir: true }], args: { path: "sub" } },
	// read: images
	{ name: "read_png", tool: "read", setup: [{ path: "img.png", base64: encode(4, 3, "png") }], args: { path: "img.png" } },
	{ name: "read_jpeg", tool: "read", setup: [{ path: "img.jpg", base64: encode(5, 4, "jpeg") }], args: { path: "img.jpg" } },
	{ name: "read_webp", tool: "read", setup: [{ path: "img.webp", base64: encode(6, 2, "webp") }], args: { path: "img.webp" } },
	{ name: "read_gif", tool: "read", setup: [{ path: "img.gif", base64: GIF_1X1 }], args: { path: "img.gif" } },
	{ name: "read_png_misnamed", tool: "read", setup: [{ path: "picture.txt", base64: encode(2, 2, "png") }], args: { path: "picture.txt" } },
	{ name: "read_png_at_limit", tool: "read", setup: [{ path: "edge.png", base64: encode(2000, 1, "png") }], args: { path: "edge.png" } },
	{ name: "read_png_too_wide", tool: "read", setup: [{ path: "wide.png", base64: encode(2400, 3, "png") }], args: { path: "wide.png" }, pitrioDiffers: RESIZED },
	{ name: "read_png_tall", tool: "read", setup: [{ path: "tall.png", image: { width: 3000, height: 8000, format: "png", pattern: "gradient" } }], args: { path: "tall.png" }, pitrioDiffers: RESIZED },
	{ name: "read_jpeg_large", tool: "read", setup: [{ path: "photo.jpg", image: { width: 4000, height: 3000, format: "jpeg", pattern: "gradient" } }], args: { path: "photo.jpg" }, pitrioDiffers: RESIZED },
	{ name: "read_jpeg_large_noisy", tool: "read", setup: [{ path: "noisy.jpg", image: { width: 4000, height: 3000, format: "jpeg", pattern: "noise" } }], args: { path: "noisy.jpg" }, pitrioDiffers: RESIZED },
	{ name: "read_jpeg_exif_rotated", tool: "read", setup: [{ path: "turned.jpg", image: { width: 3000, height: 2000, format: "jpeg", pattern: "noise", exifOrientation: 6 } }], args: { path: "turned.jpg" }, pitrioDiffers: RESIZED },
	{ name: "read_png_scale_rounding", tool: "read", setup: [{ path: "r.png", image: { width: 2250, height: 10, format: "png", pattern: "gradient" } }], args: { path: "r.png" }, pitrioDiffers: RESIZED },
	{ name: "read_png_over_bytes", tool: "read", setup: [{ path: "noise.png", image: { width: 1200, height: 1200, format: "png", pattern: "noise" } }], args: { path: "noise.png" }, pitrioDiffers: RESIZED },
	{ name: "read_png_thin", tool: "read", setup: [{ path: "thin.png", image: { width: 10000, height: 1, format: "png", pattern: "gradient" } }], args: { path: "thin.png" }, pitrioDiffers: RESIZED },
	// write
	{ name: "write_new_nested", tool: "write", setup: [], args: { path: "deep/er/new.txt", content: "fresh\ncontent\n" } },
	{ name: "write_overwrite", tool: "write", setup: [{ path: "w.txt", text: "old old old" }], args: { path: "w.txt", content: "new" } },
	{ name: "write_unicode_length", tool: "write", setup: [], args: { path: "u.txt", content: "é😀\r\n" } },
	{ name: "write_empty", tool: "write", setup: [], args: { path: "empty.txt", content: "" } },
	{ name: "write_over_directory", tool: "write", setup: [{ path: "d", dir: true }], args: { path: "d", content: "x" } },
	// edit
	{ name: "edit_single", tool: "edit", setup: [{ path: "e.py", text: "def f():\n    return 1\n" }], args: { path: "e.py", edits: [{ oldText: "return 1", newText: "return 2" }] } },
	{ name: "edit_multi", tool: "edit", setup: [{ path: "m.txt", lines: { prefix: "line ", count: 40, trailing: true } }], args: { path: "m.txt", edits: [{ oldText: "line 30\n", newText: "LINE THIRTY\nextra\n" }, { oldText: "line 3\n", newText: "" }, { oldText: "line 12", newText: "line twelve" }] } },
	{ name: "edit_far_apart", tool: "edit", setup: [{ path: "f.txt", lines: { prefix: "row ", count: 200, trailing: true } }], args: { path: "f.txt", edits: [{ oldText: "row 2\n", newText: "row two\n" }, { oldText: "row 150\n", newText: "row 150a\nrow 150b\n" }] } },
	{ name: "edit_not_found", tool: "edit", setup: [{ path: "e.txt", text: "alpha\nbeta\n" }], args: { path: "e.txt", edits: [{ oldText: "gamma", newText: "delta" }] } },
	{ name: "edit_not_found_multi", tool: "edit", setup: [{ path: "e.txt", text: "alpha\nbeta\n" }], args: { path: "e.txt", edits: [{ oldText: "alpha", newText: "A" }, { oldText: "gamma", newText: "G" }] } },
	{ name: "edit_ambiguous", tool: "edit", setup: [{ path: "e.txt", text: "x = 1\nx = 1\nx = 1\n" }], args: { path: "e.txt", edits: [{ oldText: "x = 1", newText: "x = 2" }] } },
	{ name: "edit_ambiguous_multi", tool: "edit", setup: [{ path: "e.txt", text: "a\nb\nb\n" }], args: { path: "e.txt", edits: [{ oldText: "a", newText: "A" }, { oldText: "b", newText: "B" }] } },
	{ name: "edit_overlap", tool: "edit", setup: [{ path: "e.txt", text: "one two three\n" }], args: { path: "e.txt", edits: [{ oldText: "two three", newText: "2 3" }, { oldText: "one two", newText: "1 2" }] } },
	{ name: "edit_empty_old", tool: "edit", setup: [{ path: "e.txt", text: "abc" }], args: { path: "e.txt", edits: [{ oldText: "", newText: "x" }] } },
	{ name: "edit_empty_old_multi", tool: "edit", setup: [{ path: "e.txt", text: "abc" }], args: { path: "e.txt", edits: [{ oldText: "a", newText: "x" }, { oldText: "", newText: "y" }] } },
	{ name: "edit_no_change", tool: "edit", setup: [{ path: "e.txt", text: "same\n" }], args: { path: "e.txt", edits: [{ oldText: "same", newText: "same" }] } },
	{ name: "edit_no_change_multi", tool: "edit", setup: [{ path: "e.txt", text: "p q\n" }], args: { path: "e.txt", edits: [{ oldText: "p", newText: "p" }, { oldText: "q", newText: "q" }] } },
	{ name: "edit_fuzzy_quotes", tool: "edit", setup: [{ path: "q.txt", text: "say \u201chello\u201d \u2014 it\u2019s fine   \nnext line\u00a0 \n" }], args: { path: "q.txt", edits: [{ oldText: "say \"hello\" - it's fine\nnext", newText: "say 'bye'\nnext" }] } },
	{ name: "edit_fuzzy_trailing_ws", tool: "edit", setup: [{ path: "t.txt", text: "keep  \nfix me   \nend\n" }], args: { path: "t.txt", edits: [{ oldText: "fix me\nend", newText: "fixed\nend" }] } },
	{ name: "edit_crlf", tool: "edit", setup: [{ path: "c.txt", text: "one\r\ntwo\r\nthree\r\n" }], args: { path: "c.txt", edits: [{ oldText: "two\nthree", newText: "2\n3\n3.5" }] } },
	{ name: "edit_crlf_old_text_crlf", tool: "edit", setup: [{ path: "c.txt", text: "one\r\ntwo\r\n" }], args: { path: "c.txt", edits: [{ oldText: "one\r\ntwo", newText: "uno\r\ndos" }] } },
	{ name: "edit_bom", tool: "edit", setup: [{ path: "b.txt", text: "\uFEFFfirst\nsecond\n" }], args: { path: "b.txt", edits: [{ oldText: "first", newText: "1st" }] } },
	{ name: "edit_missing_file", tool: "edit", setup: [], args: { path: "gone.txt", edits: [{ oldText: "a", newText: "b" }] } },
	{ name: "edit_no_edits", tool: "edit", setup: [{ path: "e.txt", text: "abc" }], args: { path: "e.txt", edits: [] } },
	{ name: "edit_legacy_args", tool: "edit", prepare: true, setup: [{ path: "l.txt", text: "old value\n" }], args: { path: "l.txt", oldText: "old", newText: "new" } },
	{ name: "edit_string_edits", tool: "edit", prepare: true, setup: [{ path: "s.txt", text: "k: 1\n" }], args: { path: "s.txt", edits: JSON.stringify([{ oldText: "1", newText: "2" }]) } },
	{ name: "edit_unicode_diff", tool: "edit", setup: [{ path: "u.txt", text: "héllo 😀\nwörld\n" }], args: { path: "u.txt", edits: [{ oldText: "wörld", newText: "wörld 🌍" }] } },
	{ name: "edit_append_no_newline", tool: "edit", setup: [{ path: "n.txt", text: "a\nb" }], args: { path: "n.txt", edits: [{ oldText: "b", newText: "b\nc" }] } },
	// ls
	{ name: "ls_sorting_dotfiles", tool: "ls", setup: [{ path: "d/.hidden", text: "" }, { path: "d/Zeta.txt", text: "" }, { path: "d/alpha", dir: true }, { path: "d/Beta", text: "" }, { path: "d/_under", text: "" }, { path: "d/-dash", text: "" }, { path: "d/10.txt", text: "" }, { path: "d/9.txt", text: "" }, { path: "d/a-b", text: "" }, { path: "d/ab", text: "" }, { path: "d/a.b", text: "" }, { path: "d/.config", dir: true }, { path: "d/README", text: "" }, { path: "d/readme.md", text: "" }, { path: "d/~tilde", text: "" }, { path: "d/link-to-alpha", symlink: "alpha" }, { path: "d/dangling", symlink: "nowhere" }], args: { path: "d" } },
	{ name: "ls_default_cwd", tool: "ls", setup: [{ path: "x.txt", text: "" }, { path: "y", dir: true }], args: {} },
	{ name: "ls_empty", tool: "ls", setup: [{ path: "empty", dir: true }], args: { path: "empty" } },
	{ name: "ls_missing", tool: "ls", setup: [], args: { path: "missing" } },
	{ name: "ls_file", tool: "ls", setup: [{ path: "f.txt", text: "" }], args: { path: "f.txt" } },
	{ name: "ls_big_dir", tool: "ls", setup: [{ path: "big", many: { prefix: "file", count: 600, pad: 4 } }], args: { path: "big" } },
	{ name: "ls_limit", tool: "ls", setup: [{ path: "big", many: { prefix: "f", count: 10, pad: 2 } }], args: { path: "big", limit: 3 } },
	{ name: "ls_bytes_limit", tool: "ls", setup: [{ path: "long", many: { prefix: "n".repeat(200), count: 300, pad: 3 } }], args: { path: "long", limit: 1000 } },
];

// ---------------------------------------------------------------------------------------------
// Strings longer than SUMMARY_OVER characters are stored as a summary, which the test makes of its own output too.
const SUMMARY_OVER = 4096;
function summarise(text) {
	const chars = Array.from(text);
	if (chars.length <= SUMMARY_OVER) return text;
	return {
		$summary: {
			sha256: createHash("sha256").update(text, "utf8").digest("hex"),
			chars: chars.length,
			head: chars.slice(0, 100).join(""),
			tail: chars.slice(-100).join(""),
		},
	};
}
function relativise(value) {
	if (typeof value === "string") return summarise(value.split(ROOT).join("$ROOT"));
	if (Array.isArray(value)) return value.map(relativise);
	if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, relativise(v)]));
	return value;
}
function absolutise(value) {
	if (typeof value === "string") return value.split("$ROOT").join(ROOT);
	if (Array.isArray(value)) return value.map(absolutise);
	if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, absolutise(v)]));
	return value;
}
function snapshot(dir, prefix = "") {
	const out = {};
	for (const name of fs.readdirSync(dir).sort()) {
		const full = path.join(dir, name);
		const rel = prefix + name;
		const st = fs.lstatSync(full);
		if (st.isDirectory()) Object.assign(out, snapshot(full, rel + "/"));
		else if (st.isFile()) out[rel] = fs.readFileSync(full).toString("base64");
	}
	return out;
}

const toolInfo = {};
const results = [];
for (const c of cases) {
	fs.rmSync(ROOT, { recursive: true, force: true });
	fs.mkdirSync(ROOT, { recursive: true });
	for (const spec of c.setup) makeFile(spec);
	const tool = tools.createTool(c.tool, ROOT);
	toolInfo[c.tool] ??= JSON.parse(JSON.stringify({ name: tool.name, label: tool.label, description: tool.description, parameters: tool.parameters }));
	let args = absolutise(structuredClone(c.args));
	if (c.prepare) args = tool.prepareArguments(args);
	const record = { ...c };
	delete record.prepare;
	if (c.prepare) record.prepared = relativise(args);
	try {
		const result = await tool.execute(`call-${c.name}`, args, undefined, undefined);
		record.result = relativise(JSON.parse(JSON.stringify(result)));
	} catch (error) {
		record.error = relativise(error instanceof Error ? error.message : String(error));
	}
	if (c.tool === "write" || c.tool === "edit") record.after = snapshot(ROOT);
	results.push(record);
}
fs.rmSync(ROOT, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, "tools.json"), JSON.stringify({ piVersion, root: "$ROOT", tools: toolInfo, cases: results }, null, 1) + "\n");
console.log(`wrote ${results.length} cases to ${path.join(outDir, "tools.json")}`);
