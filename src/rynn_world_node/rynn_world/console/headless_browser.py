"""A real browser on the console: Debian's headless Chromium driven by selenium.

Shared by the console's end-to-end test, the README screenshot script and the CPU benchmark,
so all three look at the page the same way. Needs ``chromium`` and ``chromium-driver``
(installed by ``make setup``) and the ``selenium`` package.
"""

from __future__ import annotations

import os
import shutil
import time

import cv2
import numpy as np

from rynn_common.ros_names import IMAGE_TOPIC

WINDOW_SIZE = (1280, 800)
COMMAND_TIMEOUT_S = 300.0  # software WebGL on two loaded cores can keep chromedriver busy for minutes


def start_browser(url: str, window_size: tuple[int, int] = WINDOW_SIZE, idle_priority: bool = False):
    """A headless Chromium showing ``url``; ``RuntimeError`` naming what is missing.

    ``idle_priority`` runs chromedriver and every browser process it starts under Linux's SCHED_IDLE policy.
    Headless Chromium draws the 3D view with software WebGL on the CPU, work a user's desktop gives its GPU;
    so scheduled, the browser takes only the CPU the graph leaves, and the page shows the graph's own rate.
    (A nice level would not do: Chromium run as root raises its own threads' priority to nice -8.)"""
    from selenium import webdriver

    driver_path, browser_path = shutil.which("chromedriver"), shutil.which("chromium")
    if driver_path is None or browser_path is None:
        raise RuntimeError("headless browser missing: install Debian's chromium and chromium-driver (make setup)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--mute-audio", f"--window-size={window_size[0]},{window_size[1]}"):
        options.add_argument(argument)
    popen_kw = {"preexec_fn": _idle_policy} if idle_priority else {}
    service = webdriver.ChromeService(executable_path=driver_path, popen_kw=popen_kw)
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.command_executor.client_config.timeout = COMMAND_TIMEOUT_S
        driver.set_page_load_timeout(COMMAND_TIMEOUT_S)
        driver.set_script_timeout(COMMAND_TIMEOUT_S)
        driver.get(url)
    except Exception:
        driver.quit()
        raise
    return driver


def _idle_policy() -> None:
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def camera_element(driver):
    """The canonical camera's <img> (the image under its topic label), or None before it is drawn."""
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.XPATH, f"//*[normalize-space(text())='{IMAGE_TOPIC}']/following::img[1]")
    return found[0] if found else None


def canonical_caption(driver) -> str:
    """The canonical camera's caption ("<fps> FPS, frame age <ms> ms, <n> frames"), shown above the image's
    topic label; "" before it is drawn."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.XPATH, f"//*[normalize-space(text())='{IMAGE_TOPIC}']/preceding::*"
                                           "[contains(text(), 'FPS, frame age') or contains(text(), 'no frames yet')][1]")
    try:
        return found[0].text if found else ""
    except StaleElementReferenceException:
        return ""


def element_pixels(element) -> np.ndarray:
    """What the browser shows of one element, as an RGB array."""
    png = np.frombuffer(element.screenshot_as_png, dtype=np.uint8)
    return cv2.cvtColor(cv2.imdecode(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def camera_pixels(driver) -> np.ndarray | None:
    """What the page shows of the canonical camera now, or None while it is not drawn. The <img> is looked
    up on every call: the page may replace it (re-render, websocket reconnect), and a kept reference goes stale.
    A screenshot the renderer does not deliver within chromedriver's own 10 s (software WebGL on loaded
    cores) is None too: the caller's deadline decides, not one slow frame."""
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException

    element = camera_element(driver)
    try:
        return None if element is None else element_pixels(element)
    except (StaleElementReferenceException, TimeoutException):
        return None


def ready_element(driver, xpath: str, timeout: float):
    """The element at ``xpath`` once the page shows it enabled (a starved browser renders late); TimeoutError
    naming it otherwise. Clicking or typing before that is lost, or raises."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def enabled():
        try:
            return next((e for e in driver.find_elements(By.XPATH, xpath) if e.is_displayed() and e.is_enabled()), None)
        except StaleElementReferenceException:
            return None

    element = wait_for(enabled, timeout)
    if element is None:
        raise TimeoutError(f"no enabled element {xpath} on the page after {timeout:g} s:\n{page_text(driver)}")
    return element


def click_button(driver, label: str, timeout: float = 120.0) -> None:
    """One click on the button ``label`` once it is shown and enabled, dispatched in the page: chromedriver's
    own click also waits for the renderer to settle, which software WebGL on loaded cores can delay past any timeout."""
    button = ready_element(driver, f"//button[normalize-space()='{label}']", timeout)
    driver.execute_script("arguments[0].click();", button)


def dismiss_notifications(driver) -> None:
    """Close the page's notifications (viser tells a software-WebGL browser it is slow)."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.CSS_SELECTOR, "[class*='Notification-closeButton']"):
        button.click()


def page_text(driver) -> str:
    """The page's visible text ("" while the document has no body yet)."""
    return driver.execute_script("return document.body ? document.body.innerText : '';") or ""


def wait_for(predicate, timeout: float, period: float = 0.25):
    """The first truthy value (or array) of ``predicate()`` within ``timeout`` seconds, else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        ready = value is not None if isinstance(value, np.ndarray) else bool(value)
        if ready or time.monotonic() > deadline:
            return value if ready else None
        time.sleep(period)
