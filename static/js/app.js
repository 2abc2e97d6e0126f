// Taskwright's only script of its own: show a plain message when a request fails in a
// way no fragment explains (a 403, 404 or 500 answered to an htmx request).
document.addEventListener("htmx:responseError", function (event) {
  var box = document.getElementById("request-error");
  if (!box) return;
  var status = event.detail.xhr.status;
  box.textContent = status === 404
    ? "That item no longer exists, or you do not have access to it. Reload the page."
    : status === 403
      ? "Your session has expired or you may not do this. Reload the page and sign in again."
      : "Something went wrong on the server (" + status + "). Nothing was saved; try again.";
  box.hidden = false;
});
document.addEventListener("htmx:sendError", function () {
  var box = document.getElementById("request-error");
  if (box) { box.textContent = "The server could not be reached. Nothing was saved; try again."; box.hidden = false; }
});
