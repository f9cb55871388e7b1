import Foundation
import Synchronization

/// A source of "now" for the engine; the engine never reads the wall clock itself.
///
/// Live recording injects `SystemClock`; replays and tests inject `ManualClock` and move it, so a
/// replay at any speed sees exactly the same instants.
public protocol WorkoutClock: Sendable {
    /// The current instant.
    func now() -> Date
}

/// The system's wall clock: the one place a real time enters the engine.
public struct SystemClock: WorkoutClock {
    public init() {}
    public func now() -> Date { Date() }
}

/// The wall clock run faster: `start` + (wall time since creation) × `rate`.
///
/// For recording sensors that a simulator plays faster than real time (`watch-sim --speed 100`
/// with `workout record --time-scale 100`): recorded instants then advance at the race's pace.
public struct ScaledClock: WorkoutClock {
    public let start: Date
    public let rate: Double
    private let origin: Date

    /// Creates a clock that reads `start` now and then runs `rate` times faster than the wall clock.
    ///
    /// - Parameters:
    ///   - start: the instant the clock reads at its creation.
    ///   - rate: race seconds per wall second; must be finite and > 0 (else 1).
    public init(start: Date = Date(), rate: Double) {
        self.start = start
        self.rate = rate.isFinite && rate > 0 ? rate : 1
        origin = Date()
    }

    public func now() -> Date { start.addingTimeInterval(Date().timeIntervalSince(origin) * rate) }
}

/// A clock that only moves when told: virtual time for replays and tests. Thread-safe.
public final class ManualClock: WorkoutClock {
    private let current: Mutex<Date>

    public init(_ start: Date = Date(timeIntervalSinceReferenceDate: 0)) {
        current = Mutex(start)
    }

    public func now() -> Date { current.withLock { $0 } }

    /// Sets the time; it may move backwards (a test's choice), the engine checks its own ordering.
    public func set(_ date: Date) { current.withLock { $0 = date } }

    /// Moves the time forward by `seconds`.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// How the identifiers of workouts and activities are made.
///
/// `random` draws random UUIDs; `seeded(n)` gives the same sequence for the same seed, so a replay
/// saves a bit-identical workout. The sequence's position lives in the builder itself, so a call that
/// throws does not consume an id and two builders with the same options draw the same ids.
public struct IdentifierSource: Sendable, Hashable {
    /// The seed of a deterministic sequence; nil for random ids.
    public let seed: UInt64?

    /// Random version-4 UUIDs.
    public static let random = IdentifierSource(seed: nil)

    /// A deterministic sequence of version-4-shaped UUIDs derived from `seed` (SplitMix64).
    public static func seeded(_ seed: UInt64) -> IdentifierSource { IdentifierSource(seed: seed) }

    private init(seed: UInt64?) {
        self.seed = seed
    }

    /// The next identifier of a sequence whose position is `state` (nil: random), advancing it.
    static func next(_ state: inout UInt64?) -> UUID {
        guard var position = state else { return UUID() }
        let a = splitMix(&position)
        let b = splitMix(&position)
        state = position
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: a >> (8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: b >> (8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }

    private static func splitMix(_ x: inout UInt64) -> UInt64 {
        x &+= 0x9E37_79B9_7F4A_7C15
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
