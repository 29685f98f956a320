// The colour theme: auto (the system's), light or dark. Loaded in <head>
// so that a stored choice applies before the page paints.
'use strict';
(() => {
  const root = document.documentElement, key = 'portico-dashboard-theme', order = ['auto', 'light', 'dark'];
  let theme = 'auto';
  try { theme = localStorage.getItem(key) || 'auto'; } catch { /* storage off: auto */ }
  if (!order.includes(theme)) theme = 'auto';
  const apply = () => {
    if (theme === 'auto') delete root.dataset.theme; else root.dataset.theme = theme;
    const b = document.getElementById('theme');
    if (b) b.textContent = 'Theme: ' + theme;
  };
  apply();
  document.addEventListener('DOMContentLoaded', () => {
    apply();
    document.getElementById('theme')?.addEventListener('click', () => {
      theme = order[(order.indexOf(theme) + 1) % order.length];
      try { localStorage.setItem(key, theme); } catch { /* not kept */ }
      apply();
    });
  });
})();
