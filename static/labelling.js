// The labelling page's keys (the buttons and links work without them): each answer's button
// lists the keys that give it in data-keys (the number shown beside it; a noul's "1 t" and
// "2 f"), s skips the state, u undoes your last label. A key typed into a field, or with a
// modifier, is the field's.
//
// A label goes by htmx and the labelling part of the page is swapped for the next question. A
// key typed while a label is on its way waits for that next question (it never falls on the one
// just answered); a refused label drops the keys waiting. After each swap the address names the
// state and question shown (data-url), so a reload shows the same ones.
//
// The answers are kept in view: on load and after each swap, when an answer's button is below
// the window's edge (a long question, many levels, a short window), the page scrolls just
// enough that the last one shows, and no further than the question's top.
(function () {
  "use strict";
  const waiting = [];
  let busy = false;

  function part() {
    return document.getElementById("labelling");
  }

  function control(key) {
    const where = part();
    return where && where.querySelector('[data-keys~="' + key + '"]');
  }

  function press(key) {
    const found = control(key);
    if (found) found.click();
    return Boolean(found);
  }

  function keepAddress() {
    const where = part();
    if (where && where.dataset.url && window.location.href !== where.dataset.url) {
      window.history.replaceState(window.history.state, "", where.dataset.url);
    }
  }

  function answersInView() {
    const where = part();
    const buttons = where ? where.querySelectorAll(".label-choices button") : [];
    if (!buttons.length) return;
    const last = buttons[buttons.length - 1].getBoundingClientRect();
    const below = last.bottom + 8 - window.innerHeight;
    if (below <= 0) return;
    const keypad = where.querySelector(".label-keypad") || where;
    const room = Math.max(0, keypad.getBoundingClientRect().top);
    window.scrollBy(0, Math.min(below, room));
  }

  function ours(event) {
    const target = event.detail && event.detail.target;
    return Boolean(target && target.id === "labelling");
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    const key = event.key && event.key.toLowerCase();
    if (!key || !/^[0-9a-z]$/.test(key)) return;
    if (busy) {
      event.preventDefault();
      waiting.push(key);
    } else if (press(key)) {
      event.preventDefault();
    }
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (ours(event)) busy = true;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    if (ours(event) && !event.detail.successful) {
      busy = false;
      waiting.length = 0;
    }
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    if (!event.target || event.target.id !== "labelling") return;
    busy = false;
    keepAddress();
    const top = part().getBoundingClientRect().top;
    if (top < 0) part().scrollIntoView({ block: "start" });
    answersInView();
    while (waiting.length && !busy) {
      if (press(waiting.shift())) break;
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    keepAddress();
    answersInView();
  });
})();
