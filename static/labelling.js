// The labelling page's keys (the buttons and links work without them): 1–9 choose the options
// or levels in declared order, t / f a noul's true or false, s skips the state, u undoes the last
// label. A key typed into a field, or with a modifier, is the field's.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    const key = event.key && event.key.toLowerCase();
    if (!key || key.length !== 1) return;
    const control = document.querySelector('[data-key="' + key.replace(/["\\]/g, "") + '"]');
    if (!control) return;
    event.preventDefault();
    control.click();
  });
})();
