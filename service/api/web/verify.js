// A finished hand's deck checked in the browser (fairness.js, WebCrypto): the verdict in the
// page's language, and each check the verifier made (its messages, worded by i18n.js).

import { element } from "/play/api.js";
import { verifyHistory } from "/play/fairness.js";
import { phrase, t } from "/play/i18n.js";

/** Verify `history` and show the verdict in `verdict` and the checks in `checks`. */
export async function showVerification(history, verdict, checks) {
  const report = await verifyHistory(history);
  let text = t(`common.verify.${report.status}`);
  if (report.partial && report.ok) text += ` ${t("common.verify.partial")}`;
  verdict.textContent = `${report.handId || t("common.verify.hand")}: ${text}`;
  verdict.dataset.status = report.status;
  checks.replaceChildren(...report.checks.map((check) => {
    const item = element("li", undefined, { class: check.passed ? "ok" : "fail" });
    item.append(element("strong", check.passed ? t("common.verify.ok") : t("common.verify.fail")), ` ${phrase(check.name)}: ${phrase(check.detail)}`);
    return item;
  }));
  return report;
}

/** Parse pasted JSON, or throw a readable error. */
export function parsePasted(text) {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new Error(t("common.verify.not_json", { why: error.message }));
  }
}
