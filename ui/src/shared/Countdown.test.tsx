import { act, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Countdown } from "./Countdown";
import { formatRemaining } from "./format";
import { activeTickers } from "./useNow";

describe("formatRemaining", () => {
  it("formats seconds, minutes, hours and days", () => {
    expect(formatRemaining(0)).toBe("0s");
    expect(formatRemaining(999)).toBe("1s");
    expect(formatRemaining(65_000)).toBe("1m 05s");
    expect(formatRemaining(3_723_000)).toBe("1h 02m 03s");
    expect(formatRemaining(2 * 86_400_000 + 3 * 3_600_000)).toBe("2d 03h");
  });
});

describe("Countdown", () => {
  const start = Date.UTC(2025, 0, 1, 0, 0, 0);

  beforeEach(() => {
    vi.useFakeTimers({ now: start });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it("ticks down every second from expiresAt and ends with the expired label", () => {
    const view = render(<Countdown expiresAt={start + 65_000} expiredLabel="done" />);
    expect(screen.getByText("1m 05s")).toBeInTheDocument();
    act(() => vi.advanceTimersByTime(1000));
    expect(screen.getByText("1m 04s")).toBeInTheDocument();
    act(() => vi.advanceTimersByTime(60_000));
    expect(screen.getByText("4s")).toBeInTheDocument();
    act(() => vi.advanceTimersByTime(4000));
    expect(screen.getByText("done")).toBeInTheDocument();
    view.unmount();
  });

  it("renders a placeholder without an instant", () => {
    const view = render(<Countdown expiresAt={null} />);
    expect(screen.getByText("—")).toBeInTheDocument();
    view.unmount();
  });

  it("shares one ticker between all countdowns and stops it when none remain", () => {
    const view = render(
      <>
        <Countdown expiresAt={start + 10_000} />
        <Countdown expiresAt={start + 20_000} />
        <Countdown expiresAt={start + 30_000} />
      </>,
    );
    expect(activeTickers()).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    act(() => vi.advanceTimersByTime(5000));
    expect(screen.getByText("5s")).toBeInTheDocument();
    expect(screen.getByText("15s")).toBeInTheDocument();
    expect(screen.getByText("25s")).toBeInTheDocument();
    view.unmount();
    expect(activeTickers()).toBe(0);
  });
});
