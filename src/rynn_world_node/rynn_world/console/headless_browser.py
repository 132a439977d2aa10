"""A real browser on the console: Debian's headless Chromium driven by selenium.

Shared by the console's end-to-end test, the README screenshot script and the CPU benchmark,
so all three look at the page the same way. Needs ``chromium`` and ``chromium-driver``
(installed by ``make setup``) and the ``selenium`` package.
"""

from __future__ import annotations

import shutil
import time

import cv2
import numpy as np

from rynn_common.ros_names import IMAGE_TOPIC

WINDOW_SIZE = (1280, 800)
COMMAND_TIMEOUT_S = 300.0  # software WebGL on two loaded cores can keep chromedriver busy for minutes


def start_browser(url: str, window_size: tuple[int, int] = WINDOW_SIZE):
    """A headless Chromium showing ``url``; ``RuntimeError`` naming what is missing."""
    from selenium import webdriver

    driver_path, browser_path = shutil.which("chromedriver"), shutil.which("chromium")
    if driver_path is None or browser_path is None:
        raise RuntimeError("headless browser missing: install Debian's chromium and chromium-driver (make setup)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--mute-audio", f"--window-size={window_size[0]},{window_size[1]}"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver_path), options=options)
    try:
        driver.command_executor.client_config.timeout = COMMAND_TIMEOUT_S
        driver.set_page_load_timeout(COMMAND_TIMEOUT_S)
        driver.set_script_timeout(COMMAND_TIMEOUT_S)
        driver.get(url)
    except Exception:
        driver.quit()
        raise
    return driver


def camera_element(driver):
    """The canonical camera's <img> (the image under its topic label), or None before it is drawn."""
    from selenium.webdriver.common.by import By

    found = driver.find_elements(By.XPATH, f"//*[normalize-space(text())='{IMAGE_TOPIC}']/following::img[1]")
    return found[0] if found else None


def element_pixels(element) -> np.ndarray:
    """What the browser shows of one element, as an RGB array."""
    png = np.frombuffer(element.screenshot_as_png, dtype=np.uint8)
    return cv2.cvtColor(cv2.imdecode(png, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def click_button(driver, label: str) -> None:
    """One click, dispatched in the page: chromedriver's own click also waits for the renderer
    to settle, which software WebGL on loaded cores can delay past any timeout."""
    from selenium.webdriver.common.by import By

    button = driver.find_element(By.XPATH, f"//button[normalize-space()='{label}']")
    driver.execute_script("arguments[0].click();", button)


def dismiss_notifications(driver) -> None:
    """Close the page's notifications (viser tells a software-WebGL browser it is slow)."""
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.CSS_SELECTOR, "[class*='Notification-closeButton']"):
        button.click()


def page_text(driver) -> str:
    return driver.execute_script("return document.body.innerText;")


def wait_for(predicate, timeout: float, period: float = 0.25):
    """The first truthy value of ``predicate()`` within ``timeout`` seconds, else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value or None
        time.sleep(period)
