// Every string the pages show comes from one table per language (/play/strings/<lang>.json,
// keys `common.*`, `play.*`, `admin.*` and the game's words). The language is the one kept
// in localStorage by the switch (a <select id="language">), else the browser's first
// language we have, else English; a key missing from a table falls back to English.
//
// Static text is marked in the HTML: `data-i18n="key"` (the element's text),
// `data-i18n-label` (aria-label), `data-i18n-placeholder`; `translate()` fills them in.

const STORE = "guts.language"; // localStorage: the language chosen with the switch
export const LANGUAGES = { en: "English", es: "Español" };
const tables = {};
let current = "en";

export const language = () => current;

function fromBrowser() {
  for (const tag of navigator.languages || [navigator.language]) {
    const base = String(tag || "").toLowerCase().split("-")[0];
    if (base in LANGUAGES) return base;
  }
  return "en";
}

async function load(lang) {
  if (!tables[lang]) {
    const response = await fetch(`/play/strings/${lang}.json`, { cache: "no-cache" });
    tables[lang] = response.ok ? await response.json() : {};
  }
}

/** The string `key` in the current language, with `{name}` filled in from `vars`. */
export function t(key, vars = {}) {
  const text = (tables[current] || {})[key] ?? (tables.en || {})[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}

/**
 * The words of a message `{key, values}` (what fairness.js returns), or of a list of them
 * (joined with "; "): a value that is a message or a list is worded first, anything else
 * shown as it is.
 */
export function phrase(message) {
  if (Array.isArray(message)) return message.map(phrase).join("; ");
  if (!message || typeof message !== "object" || typeof message.key !== "string") return message;
  const values = Object.fromEntries(Object.entries(message.values || {}).map(([name, v]) => [name, phrase(v)]));
  return t(message.key, values);
}

/** Fill in the marked static text under `root`. */
export function translate(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const node of root.querySelectorAll("[data-i18n-label]")) {
    node.setAttribute("aria-label", t(node.dataset.i18nLabel));
  }
  for (const node of root.querySelectorAll("[data-i18n-placeholder]")) {
    node.setAttribute("placeholder", t(node.dataset.i18nPlaceholder));
  }
  if (root === document) {
    document.documentElement.lang = current;
    if (document.body.dataset.i18nTitle) document.title = t(document.body.dataset.i18nTitle);
  }
}

/** Load the tables, translate the page and wire the switch; `onChange` re-renders. */
export async function startI18n(onChange) {
  await load("en");
  const kept = localStorage.getItem(STORE);
  current = kept in LANGUAGES ? kept : fromBrowser();
  await load(current);
  translate();
  const select = document.getElementById("language");
  if (!select) return;
  select.replaceChildren(...Object.entries(LANGUAGES).map(([code, name]) => {
    const option = document.createElement("option");
    option.value = code;
    option.textContent = name;
    option.lang = code;
    return option;
  }));
  select.value = current;
  select.addEventListener("change", async () => {
    current = select.value in LANGUAGES ? select.value : "en";
    localStorage.setItem(STORE, current);
    await load(current);
    translate();
    if (onChange) onChange();
  });
}
