// Live updates without reloading: every 1.5 s, fetch /live and put each value into the
// element with the matching data-live key (as text, never as HTML) and each queue's chart
// (SVG drawn by the server from numbers only). An element with data-region="<url>" (the
// Tasks and Workers tables) gets its rows again from that URL: HTML the server rendered
// with every user-supplied string escaped, exactly as in the page itself.
(function () {
  "use strict";
  function tick() {
    fetch("/live", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        data.values.now = data.now;
        document.querySelectorAll("[data-live]").forEach(function (el) {
          var v = data.values[el.getAttribute("data-live")];
          if (v !== undefined && el.textContent !== v) { el.textContent = v; }
        });
        document.querySelectorAll("[data-chart]").forEach(function (el) {
          var svg = data.charts[el.getAttribute("data-chart")];
          if (svg !== undefined) { el.innerHTML = svg; }
        });
      })
      .catch(function () {});
  }
  function regions() {
    document.querySelectorAll("[data-region]").forEach(function (el) {
      fetch(el.getAttribute("data-region"), { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html !== null && el.pgtasksHtml !== html) {
            el.innerHTML = html;
            el.pgtasksHtml = html;
          }
        })
        .catch(function () {});
    });
  }
  setInterval(tick, 1500);
  setInterval(regions, 1500);
})();
