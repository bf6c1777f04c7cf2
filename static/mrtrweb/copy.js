// Copy buttons of secret boxes (templates/_secret_box.html): shown only when this script runs,
// they copy the text of the element named by data-copy and say so beside the button. Under the
// CSP (no inline script), a file of its own; without it the text is selected and copied by hand.
(function () {
  "use strict";

  function say(id, words) {
    var status = document.querySelector('[data-copied-for="' + id + '"]');
    if (status) status.textContent = words;
  }

  function selectText(element) {
    var range = document.createRange();
    range.selectNodeContents(element);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copy(button) {
    var id = button.getAttribute("data-copy");
    var source = document.getElementById(id);
    if (!source) return;
    var text = source.textContent.trim();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(
        function () { say(id, "Copied."); },
        function () { selectText(source); say(id, "Selected: press Ctrl+C (⌘C) to copy."); }
      );
      return;
    }
    // Plain-HTTP pages have no clipboard API: select the text and use the older command.
    selectText(source);
    var copied = false;
    try { copied = document.execCommand("copy"); } catch (error) { copied = false; }
    say(id, copied ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.");
  }

  function reveal(root) {
    var buttons = root.querySelectorAll("button[data-copy]");
    for (var i = 0; i < buttons.length; i++) buttons[i].hidden = false;
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (button) copy(button);
  });
  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  // Boxes swapped in by htmx get their buttons too.
  document.addEventListener("htmx:load", function (event) { reveal(event.target); });
})();
