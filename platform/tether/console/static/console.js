// Tether console: small progressive enhancements. The pages work without this file.
"use strict";
(function () {
  // Upload progress: htmx reports the XHR's upload progress on the form.
  document.addEventListener("htmx:xhr:progress", function (event) {
    var form = event.target.closest("form[data-progress]");
    if (!form || !event.detail.lengthComputable) return;
    var bar = document.getElementById(form.getAttribute("data-progress"));
    if (bar) { bar.hidden = false; bar.value = Math.round(event.detail.loaded / event.detail.total * 100); }
  });
  // Forms marked data-reset start empty again after htmx sent them (an upload).
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target.closest ? event.target.closest("form[data-reset]") : null;
    if (form && event.detail.successful) {
      form.reset();
      var bar = document.getElementById(form.getAttribute("data-progress"));
      if (bar) { bar.hidden = true; bar.value = 0; }
    }
  });
  // A refused upload (too large, empty, not a PDF/text file): say why in the form, as
  // text (the error page's detail or the problem's), instead of a silent stuck bar.
  document.addEventListener("htmx:afterRequest", function (event) {
    var form = event.target.closest ? event.target.closest("form[data-progress]") : null;
    if (!form) return;
    var box = form.querySelector("[data-upload-error]");
    if (!box) return;
    if (event.detail.successful) { box.hidden = true; box.textContent = ""; return; }
    var xhr = event.detail.xhr, detail = "";
    try {
      var type = (xhr && xhr.getResponseHeader("Content-Type")) || "";
      if (type.indexOf("json") >= 0) {
        detail = JSON.parse(xhr.responseText).detail || "";
      } else if (xhr && xhr.responseText) {
        var found = new DOMParser().parseFromString(xhr.responseText, "text/html").getElementById("error-detail");
        detail = found ? found.textContent : "";
      }
    } catch (ignored) { detail = ""; }
    box.textContent = box.getAttribute("data-upload-error") + (detail ? " " + detail : "");
    box.hidden = false;
    var bar = document.getElementById(form.getAttribute("data-progress"));
    if (bar) { bar.hidden = true; bar.value = 0; }
  });
  // Copy a shown-once token to the clipboard.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (source && navigator.clipboard) navigator.clipboard.writeText(source.textContent.trim());
  });
  // Forms that ask before they act (forget, revoke) without inline script.
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
