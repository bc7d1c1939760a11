/**
 * How many events a frame may hold, learned from `SLOW_FRAME` refusals and kept across a
 * client's reconnects. A receiver that took longer than the apply-time limit on a frame asks its
 * peer for frames of half that size (`want.maxFrameEvents`); a sender whose frame the peer
 * refused as too slow halves its own frames. When a frame of one event is still too slow, or
 * the peer cannot cut frames as small as asked (a frame may only end at a signature, so a relay
 * cannot go below the signed segments it received), smaller frames cannot help: the budget is
 * exhausted and retrying stops.
 */
import { MAX_FRAME_EVENTS } from './messages.js'

export class FrameBudget {
  /** What to ask of the peer; undefined until a frame was too slow here. */
  receive: number | undefined
  /** The most events this side puts in a frame. */
  send = MAX_FRAME_EVENTS
  /** A frame of one event was too slow: no smaller frame can help. */
  exhausted = false

  /** A frame of `events` took too long to apply here: ask for frames of half as many. */
  shrinkReceive(events: number): void {
    if (events === 0) return
    // One event, or a frame bigger than was asked for: the peer cannot go smaller.
    if (events === 1 || (this.receive !== undefined && events > this.receive)) this.exhausted = true
    else this.receive = Math.min(this.receive ?? MAX_FRAME_EVENTS, Math.floor(events / 2))
  }

  /** The peer refused a frame of at most `events` as too slow: send half as many. */
  shrinkSend(events: number): void {
    if (events === 0) return // nothing was sent: the refusal is not about this side's frames
    // One event, or a frame already bigger than the budget (a signed segment cannot be cut).
    if (events === 1 || events > this.send) this.exhausted = true
    else this.send = Math.min(this.send, Math.floor(events / 2))
  }
}
