/**
 * The commits of a store on disk that took its changes and are not durable yet. A store trims its
 * memory only once none is in flight: the disk then holds every change but those since the last take,
 * so an entry memory lets go of can be read back as it was.
 */
export class InFlightCommits {
  private count = 0

  constructor(
    /** Whether the store is on disk now (it is attached after it is built). */
    private readonly onDisk: () => boolean,
    /** Called once no commit is in flight. */
    private readonly settle: () => void,
  ) {}

  /** A commit took the store's changes (`StoreContents.taken`). */
  taken(): void {
    if (this.onDisk()) this.count++
  }

  /** The oldest commit in flight is durable (`StoreContents.committed`). */
  committed(): void {
    if (!this.onDisk()) return
    this.count = Math.max(0, this.count - 1)
    if (this.count === 0) this.settle()
  }
}
