// Import / export of the rules: a JSON list of PermissionRule objects,
// exported as text and as a download, imported all or nothing (from the text
// box or a chosen file), optionally replacing the rules there are.
import { h } from "../lib/dom";
import { show, type Section } from "./channel";

export function ioSection({ act }: Section) {
  const ioText = h("textarea", { class: "perm-short", "data-testid": "perm-io-text", spellcheck: "false",
    placeholder: "rules file: a JSON list of PermissionRule objects" }) as HTMLTextAreaElement;
  const exportBtn = h("button", { "data-testid": "perm-export" }, "Export");
  const downloadLink = h("a", { "data-testid": "perm-download", hidden: true, download: "permission_rules.json" }, "download") as HTMLAnchorElement;
  const fileInput = h("input", { type: "file", accept: ".json,application/json", "data-testid": "perm-import-file" }) as HTMLInputElement;
  const replaceBox = h("input", { type: "checkbox", "data-testid": "perm-import-replace" }) as HTMLInputElement;
  const importBtn = h("button", { "data-testid": "perm-import" }, "Import (all or nothing)");
  const ioError = h("div", { class: "nbh-error", "data-testid": "perm-io-error", hidden: true });
  const ioInfo = h("div", { class: "nbh-ok", "data-testid": "perm-io-info", hidden: true });
  const el = h("section", {},
    h("h4", {}, "Import / export rules"),
    h("div", { class: "nbh-row" }, exportBtn, downloadLink, fileInput,
      h("label", { class: "nbh-muted" }, replaceBox, " replace existing rules"), importBtn),
    ioText,
    ioError,
    ioInfo,
  );

  exportBtn.addEventListener("click", async () => {
    const reply = await act("export", {}, ioError);
    if (!reply) return;
    ioText.value = reply.text;
    if (downloadLink.href) URL.revokeObjectURL(downloadLink.href);
    downloadLink.href = URL.createObjectURL(new Blob([reply.text], { type: "application/json" }));
    downloadLink.hidden = false;
    show(ioInfo, null);
  });
  fileInput.addEventListener("change", async () => {
    const file = fileInput.files && fileInput.files[0];
    if (file) ioText.value = await file.text();
  });
  importBtn.addEventListener("click", async () => {
    const reply = await act("import", { text: ioText.value, replace: replaceBox.checked }, ioError);
    show(ioInfo, reply ? `Imported ${reply.count} rule(s).` : null);
  });

  /** Let go of the download's object URL. */
  function dispose(): void {
    if (downloadLink.href) URL.revokeObjectURL(downloadLink.href);
  }

  return { el, dispose };
}
