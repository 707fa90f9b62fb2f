// The version editor's client-side moves: reorder, add and remove rows and questions (a
// removal can be undone), the keyboard (Enter in a row adds the next row, Ctrl/Cmd+S saves in
// place, the skip link goes to Save), invalid fields outlined, the document-wide counts kept
// live while typing, and the preview's answers brought into view.
// Everything else (validation, counters, type changes, duplicates) is the server's, via htmx.
(function () {
  "use strict";
  let dirty = false;
  let edits = 0; // edits so far; a save clears the flag only if none came while it was sent
  let editsSent = 0;
  let removed = null; // the last removal: {element, parent, next, what}

  // A card's "Which words decide?" form asks about the saved version: choosing its state or
  // backend edits nothing, so the card neither turns unsaved nor checks itself again.
  for (const kind of ["input", "change"]) {
    document.addEventListener(kind, function (event) {
      if (event.target.closest && event.target.closest(".attribution")) event.stopPropagation();
    }, true);
  }

  function markDirty() {
    dirty = true;
    edits += 1;
    const flag = document.getElementById("dirty");
    if (flag) flag.textContent = "Unsaved changes";
    const saved = document.getElementById("saved");
    if (saved) saved.textContent = "";
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

  function firstField(element) {
    return element.querySelector("input:not([type=hidden]), textarea");
  }

  // A new row, after `after` (or last): its warnings wait until something is typed in it.
  function addRow(card, after) {
    const template = card.querySelector("template.row-template");
    const key = newKey();
    const holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.replaceAll("__ROW__", key);
    const row = holder.firstElementChild;
    const quiet = document.createElement("input");
    quiet.type = "hidden";
    quiet.name = "q-" + card.dataset.card + "-untouched";
    quiet.value = key;
    quiet.className = "untouched";
    row.appendChild(quiet);
    const rows = card.querySelector(".rows");
    if (after && after.parentNode === rows) after.after(row);
    else rows.appendChild(row);
    const field = firstField(row);
    if (field) field.focus();
    return row;
  }

  function showUndo(what) {
    const undo = document.getElementById("undo");
    if (!undo) return;
    undo.textContent = "Removed " + what + ". ";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary small";
    button.dataset.action = "undo-remove";
    button.textContent = "Undo";
    undo.appendChild(button);
    button.focus();
  }

  function remove(element, what) {
    removed = { element: element, parent: element.parentNode, next: element.nextSibling, what: what };
    element.remove();
    showUndo(what);
  }

  function undoRemove() {
    const undo = document.getElementById("undo");
    if (undo) undo.textContent = "";
    if (!removed) return null;
    const { element, parent, next } = removed;
    removed = null;
    parent.insertBefore(element, next && next.parentNode === parent ? next : null);
    const field = firstField(element) || element.querySelector("button");
    if (field) field.focus();
    return element;
  }

  function nameOf(element) {
    const field = element.querySelector(".row-name, .qid input, .qid code");
    const name = field ? (field.value !== undefined ? field.value : field.textContent) : "";
    return name.trim() ? "“" + name.trim() + "”" : "a blank row";
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-action]");
    if (!button || button.closest("fieldset[disabled]")) return;
    let card = button.closest(".card");
    const row = button.closest(".row");
    let keepFocus = true;
    switch (button.dataset.action) {
      case "row-up": move(row, -1); break;
      case "row-down": move(row, 1); break;
      case "row-remove":
        remove(row, (card.classList.contains("type-score") ? "a level" : "option " + nameOf(row)));
        keepFocus = false;
        break;
      case "row-add": addRow(card, null); keepFocus = false; break;
      case "card-up": move(card, -1); break;
      case "card-down": move(card, 1); break;
      case "card-remove": remove(card, "question " + nameOf(card)); keepFocus = false; break;
      case "undo-remove": {
        const back = undoRemove();
        card = back && (back.closest(".card") || back);
        keepFocus = false;
        break;
      }
      default: return;
    }
    if (keepFocus && button.isConnected) button.focus();
    markDirty();
    revalidate(card);
    recount();
  });

  document.addEventListener("keydown", function (event) {
    // Ctrl/Cmd+S saves the page in place (never the browser's "save as"): htmx posts the
    // editor's form and the focused field keeps its focus and the page its scroll
    if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "s") {
      const form = document.getElementById("editor");
      if (form) {
        event.preventDefault();
        form.requestSubmit();
      }
      return;
    }
    if (event.key !== "Enter" || event.isComposing || event.shiftKey) return;
    const field = event.target;
    if (!(field instanceof HTMLInputElement) || !field.closest("#cards")) return;
    // Enter in a field of the editor never submits the whole page; in a row it adds the next
    event.preventDefault();
    const row = field.closest(".rows > .row");
    const card = field.closest(".card");
    if (row && card) {
      addRow(card, row);
      markDirty();
      revalidate(card);
    }
  });

  document.addEventListener("input", function (event) {
    if (!event.target.closest("#cards")) return;
    markDirty();
    const row = event.target.closest(".row");
    const quiet = row && row.querySelector("input.untouched");
    if (quiet) quiet.remove(); // typed in: its warnings are shown from now on
  });

  // The document-wide counts: the document's own issues plus every card's, as each card's
  // check comes back (a check looks at one card; the others keep their last counts).
  function recount() {
    const counts = document.querySelector("#document-status .document-counts");
    if (!counts) return;
    let errors = Number(counts.dataset.invalid || 0);
    let warnings = Number(counts.dataset.lints || 0);
    for (const status of document.querySelectorAll("#cards .card-status")) {
      errors += Number(status.dataset.invalid || 0);
      warnings += Number(status.dataset.lints || 0);
    }
    counts.textContent = " · " + errors + " error" + (errors === 1 ? "" : "s") + ", " +
      warnings + " warning" + (warnings === 1 ? "" : "s") + " in this version";
  }

  // Invalid fields are outlined (aria-invalid) and described by their issues.
  const FIELD_OF = {
    id: "input[name$='-id']",
    instructions: ".instructions-text",
  };
  function fieldsOf(slot) {
    const card = slot.closest(".card");
    if (!card) return [];
    const part = slot.id.slice(("slot-" + card.dataset.card + "-").length).split("-")[0];
    if (FIELD_OF[part]) return Array.from(card.querySelectorAll(FIELD_OF[part])).slice(0, 1);
    if (part === "row") {
      const row = slot.closest(".row");
      if (!row) return [];
      const codes = Array.from(slot.querySelectorAll(".issue.error"), (p) => p.dataset.code || "");
      const named = codes.some((c) => c.includes("name") || c.includes("duplicate"));
      const described = shapeOf(row) === "json" ? ".entry-json" : ".what";
      const field = row.querySelector(named ? ".row-name" : described) || row.querySelector(described);
      return field ? [field] : [];
    }
    return [];
  }
  // A row's shape: its own select, or for a noul's case the card's one criteria control
  function shapeOf(row) {
    const own = row.querySelector("select.shape");
    if (own) return own.value;
    const mode = row.closest(".card") && row.closest(".card").querySelector("select.noul-mode");
    const chosen = mode && mode.selectedOptions[0];
    if (!chosen) return "";
    return row.dataset.row === "t" ? chosen.dataset.true : chosen.dataset.false;
  }
  function markInvalid() {
    for (const field of document.querySelectorAll("#cards [aria-invalid]")) {
      field.removeAttribute("aria-invalid");
    }
    for (const slot of document.querySelectorAll("#cards .slot")) {
      if (!slot.querySelector(".issue.error")) continue;
      for (const field of fieldsOf(slot)) {
        field.setAttribute("aria-invalid", "true");
        field.setAttribute("aria-describedby", slot.id);
      }
    }
  }

  document.addEventListener("htmx:afterSettle", function () {
    recount();
    markInvalid();
    noticeSaved();
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "cards") markDirty();
  });
  // A save (the editor's form, or a try across states that saved the page first) swaps in
  // the new base revision, marked data-saved: the page is no longer dirty, unless something
  // was typed while the save was on its way.
  document.addEventListener("htmx:beforeRequest", function (event) {
    const elt = event.detail.elt;
    if (elt instanceof Element && elt.matches("#editor, .try-start")) editsSent = edits;
  });
  function noticeSaved() {
    const base = document.getElementById("base-revision");
    if (!base || !base.dataset.saved) return;
    const revision = base.dataset.saved;
    delete base.dataset.saved;
    const saved = document.getElementById("saved");
    if (saved && saved.dataset.revision !== revision) {
      saved.textContent = "Saved revision " + revision + ".";
      saved.className = "saved saved-success";
      saved.dataset.revision = revision;
    }
    if (edits > editsSent) return;
    dirty = false;
    const flag = document.getElementById("dirty");
    if (flag) flag.textContent = "";
  }

  // The skip link goes to Save (a link to a button would only scroll there).
  document.addEventListener("click", function (event) {
    const link = event.target.closest && event.target.closest("[data-skip-to]");
    const target = link && document.getElementById(link.dataset.skipTo);
    if (!target) return;
    event.preventDefault();
    target.focus();
  });

  // The preview's answers come into view when they arrive below what is shown (in the pane on
  // a wide screen, in the page on a phone), above the sticky bar.
  document.addEventListener("htmx:afterSettle", function (event) {
    const result = event.target;
    if (!(result instanceof Element) || result.id !== "preview-result") return;
    const bar = document.querySelector(".editor-bar");
    const bottom = bar ? bar.getBoundingClientRect().top : window.innerHeight;
    if (result.getBoundingClientRect().top > bottom - 48) {
      result.scrollIntoView({ block: "start", behavior: "instant" });
    }
  });

  // No field that takes focus stays behind the sticky bar (WCAG 2.4.11): the browser scrolls
  // a focused field into view only when it is wholly out of it.
  document.addEventListener("focusin", function (event) {
    const bar = document.querySelector(".editor-bar");
    const field = event.target;
    if (!bar || !(field instanceof Element) || bar.contains(field)) return;
    const limit = bar.getBoundingClientRect().top - 8;
    const hidden = field.getBoundingClientRect().bottom - limit;
    if (hidden <= 0 || getComputedStyle(bar).position !== "sticky") return;
    const pane = field.closest(".pane-side");
    const scroller = pane && pane.scrollHeight > pane.clientHeight ? pane : window;
    scroller.scrollBy(0, hidden);
  });

  // a save without htmx leaves the page: nothing typed is lost by it
  document.addEventListener("submit", function (event) {
    if (event.target.id === "editor" && !window.htmx) dirty = false;
  });
  window.addEventListener("beforeunload", function (event) {
    if (dirty) {
      event.preventDefault();
      event.returnValue = "";
    }
  });
  document.addEventListener("DOMContentLoaded", markInvalid);
})();
