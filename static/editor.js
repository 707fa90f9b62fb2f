// The version editor's few client-side moves: reorder, add and remove rows and questions.
// Everything else (validation, counters, type changes, duplicates) is the server's, via htmx.
(function () {
  "use strict";
  let dirty = false;

  function markDirty() {
    dirty = true;
    const flag = document.getElementById("dirty");
    if (flag) flag.textContent = "Unsaved changes";
  }

  function revalidate(card) {
    const target = card && card.isConnected ? card : document.querySelector("#cards .card");
    if (target && window.htmx) window.htmx.trigger(target, "revalidate");
  }

  function move(element, direction) {
    if (direction < 0 && element.previousElementSibling) {
      element.parentNode.insertBefore(element, element.previousElementSibling);
    } else if (direction > 0 && element.nextElementSibling) {
      element.parentNode.insertBefore(element.nextElementSibling, element);
    }
  }

  function newKey() {
    return Math.random().toString(16).slice(2, 10);
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-action]");
    if (!button || button.closest("fieldset[disabled]")) return;
    const card = button.closest(".card");
    const row = button.closest(".row");
    switch (button.dataset.action) {
      case "row-up": move(row, -1); break;
      case "row-down": move(row, 1); break;
      case "row-remove": row.remove(); break;
      case "row-add": {
        const template = card.querySelector("template.row-template");
        const html = template.innerHTML.replaceAll("__ROW__", newKey());
        const rows = card.querySelector(".rows");
        rows.insertAdjacentHTML("beforeend", html);
        const added = rows.lastElementChild.querySelector("input:not([type=hidden]), textarea");
        if (added) added.focus();
        break;
      }
      case "card-up": move(card, -1); break;
      case "card-down": move(card, 1); break;
      case "card-remove": card.remove(); break;
      default: return;
    }
    button.isConnected && button.focus();
    markDirty();
    revalidate(card);
  });

  document.addEventListener("input", function (event) {
    if (event.target.closest("#cards")) markDirty();
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "cards") markDirty();
  });
  document.addEventListener("submit", function (event) {
    if (event.target.id === "editor") dirty = false;
  });
  window.addEventListener("beforeunload", function (event) {
    if (dirty) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
})();
