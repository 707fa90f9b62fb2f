// Behaviour every page shares, kept out of the HTML so the content security policy can forbid
// inline scripts: a form with data-confirm asks before it is sent (with data-confirm-if, only
// when the element that selector names shows some text, e.g. "Unsaved changes").
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    const form = event.target;
    const question = form.dataset && form.dataset.confirm;
    if (!question) return;
    const condition = form.dataset.confirmIf;
    if (condition) {
      const flag = document.querySelector(condition);
      if (!flag || !flag.textContent.trim()) return;
    }
    if (!window.confirm(question)) event.preventDefault();
  });
})();
