// The navigation column is narrow: a module name such as dawrap.models.dirichlet_multinomial
// breaks after a dot (a zero-width space there), never in the middle of a word.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll(".bd-sidebar-primary nav a").forEach(function (link) {
    var walker = document.createTreeWalker(link, NodeFilter.SHOW_TEXT);
    for (var node = walker.nextNode(); node; node = walker.nextNode()) {
      if (/\w\.\w/.test(node.nodeValue)) {
        node.nodeValue = node.nodeValue.replace(/(\w)\.(?=\w)/g, "$1.\u200b");
      }
    }
  });
});
