// Table creation with every variant option: the form is made from /play/rule-options.json
// (every ruleset option as the rules check it: kind, choices, bounds, default), so it offers
// whatever the rules have. An option left at "as the preset" is not sent; the server resolves
// the rest and answers 422 for a combination that cannot work.

import { element } from "/play/api.js";
import { t } from "/play/i18n.js";

const TOP = new Set(["ante", "decision_timeout_s"]); // asked for outside the variant options
let kinds = null;

/** Fetch the options once and lay out the form's fields in `container`. */
export async function buildRuleForm(container, presetSelect) {
  if (!kinds) {
    const response = await fetch("/play/rule-options.json", { cache: "no-cache" });
    kinds = await response.json();
  }
  presetSelect.replaceChildren(...Object.keys(kinds.presets).map((name) => element("option", name, { value: name })));
  presetSelect.value = "three-card";
  renderRuleForm(container);
}

/** (Re)label the fields in the current language, keeping what was chosen. */
export function renderRuleForm(container) {
  if (!kinds) return;
  const chosen = ruleOverrides(container);
  const fields = Object.entries(kinds.options).filter(([name]) => !TOP.has(name)).map(([name, kind]) => {
    const id = `rule-${name}`;
    const wrap = element("div", undefined, { class: "field" });
    wrap.append(element("label", t(`common.rules.${name}`), { for: id }));
    let input;
    if (kind.kind === "bool" || kind.kind === "choice") {
      input = element("select", undefined, { id, name });
      const values = kind.kind === "bool" ? ["true", "false"] : kind.choices;
      input.append(element("option", t("play.create.as_preset"), { value: "" }),
        ...values.map((v) => element("option", t(`common.value.${v}`), { value: v })));
    } else {
      input = element("input", undefined, {
        id, name, type: "number", min: String(kind.min), max: String(kind.max),
        step: String(kind.step || 1), placeholder: t("play.create.as_preset"),
      });
    }
    input.dataset.kind = kind.kind;
    if (name in chosen) input.value = String(chosen[name]);
    wrap.append(input);
    return wrap;
  });
  container.replaceChildren(...fields);
}

/** The options changed from the preset, typed as the API wants them. */
export function ruleOverrides(container) {
  const rules = {};
  for (const input of container.querySelectorAll("select, input")) {
    if (input.value === "") continue;
    const kind = input.dataset.kind;
    rules[input.name] = kind === "bool" ? input.value === "true" : kind === "choice" ? input.value : Number(input.value);
  }
  return rules;
}
