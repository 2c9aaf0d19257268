// The permission explorer's own styles (the shared theme ships once per
// kernel with the page code: lib/theme.css, nb_hitl/widgets/_page_code.py).
export const PERM_CSS = `
.nbh-perm section { margin: 8px 0; }
.nbh-perm h4 { margin: 6px 0 4px; font-size: var(--jp-ui-font-size1, 13px); color: var(--jp-ui-font-color0, #000); }
.nbh-perm .perm-b { display: inline-block; min-width: 44px; text-align: center; padding: 0 6px; border-radius: 3px; font-weight: 600;
  font-size: var(--jp-ui-font-size0, 11px); color: var(--jp-ui-inverse-font-color0, #fff); }
.nbh-perm .perm-b-allow { background: var(--jp-success-color1, #388e3c); }
.nbh-perm .perm-b-deny { background: var(--jp-error-color1, #d32f2f); }
.nbh-perm .perm-b-ask { background: var(--jp-warn-color1, #f57c00); }
.nbh-perm .perm-b-passthrough { background: var(--jp-layout-color4, #999); }
.nbh-perm code { font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 12px); }
.nbh-perm td.perm-live { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: -2px; }
.nbh-perm .perm-why li { margin: 2px 0; }
.nbh-perm input.perm-content { min-width: 260px; }
.nbh-perm textarea.perm-short { min-height: 60px; }
`;
