# Chromium, driven headless by cmd/drwatch/api/apitest.Browse (--dump-dom and
# --screenshot) to look at the status page as a person would. No chromedp:
# the command line is enough for a DOM dump and a screenshot.
present() { command -v chromium >/dev/null 2>&1; }
install() { apt_install chromium fonts-dejavu-core; }
