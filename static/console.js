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

// data-copy="#id": a button that copies the text of the element #id.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const source = document.querySelector(button.dataset.copy);
  if (!source) return;
  const text = source.textContent.trim();
  const done = () => {
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1500);
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => selectText(source));
  } else {
    selectText(source);
  }
});

// Where the clipboard cannot be written, select the text so Ctrl/Cmd+C copies it.
function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}

// data-slug-from="#id": a slug input filled from another field as it is typed, until the slug
// itself is edited by hand.
document.addEventListener("input", (event) => {
  for (const slug of document.querySelectorAll("[data-slug-from]")) {
    if (event.target === slug) {
      slug.dataset.edited = slug.value ? "yes" : "";
    } else if (event.target.matches(slug.dataset.slugFrom) && !slug.dataset.edited) {
      slug.value = slugify(event.target.value);
    }
  }
});

function slugify(text) {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

// htmx 2 swaps no 4xx response by default, so a refused request (the error middleware's
// fragment at the refusal's status, Django's 403 or 404 page, a plain-text 404) would change
// nothing on the page and say nothing. Its words go into #request-error (base.html) instead,
// and what asked is left as it was.
document.addEventListener("htmx:beforeSwap", (event) => {
  const xhr = event.detail.xhr;
  if (!xhr || xhr.status < 400 || xhr.status >= 500) return;
  const region = document.getElementById("request-error");
  if (!region) return;
  event.detail.shouldSwap = false;
  const message = document.createElement("p");
  message.className = "message error";
  message.setAttribute("role", "alert");
  message.textContent = refusalText(xhr);
  region.replaceChildren(message);
});

// The words of a refused response: the error fragment's, a page's alert, a JSON detail, or
// the plain text; its status when it has none.
function refusalText(xhr) {
  const type = (xhr.getResponseHeader("Content-Type") || "").toLowerCase();
  const body = xhr.responseText || "";
  if (type.startsWith("text/html")) {
    const page = new DOMParser().parseFromString(body, "text/html");
    const found =
      page.getElementById("error-detail") ||
      page.querySelector("main [role=alert], main .message.error, [role=alert]");
    if (found && found.textContent.trim()) return found.textContent.trim();
  } else if (type.startsWith("application/json")) {
    try {
      const detail = JSON.parse(body).detail;
      if (detail) return String(detail);
    } catch (error) {
      // not JSON after all: the status below
    }
  } else if (body.trim()) {
    return body.trim().slice(0, 500);
  }
  return `${xhr.status} ${xhr.statusText || "refused"}: nothing was changed.`;
}
