import Foundation

/// How a file is imported, whatever its format: the one set of options every reader takes (the FIT
/// reader's `FITImportPlan`, the Apple Health reader). A reader ignores what its format has no use for.
public struct ImportOptions: Sendable, Hashable {
    /// Let the session's automatic transition detection find the legs of a multisport, and their sports
    /// (`LegSequence.detected`), instead of changing legs at the file's session boundaries (FIT).
    ///
    /// A file of one session is planned as a swim-bike-run only when it is a triathlon recorded in one sport
    /// (sport running, generic or multisport, its records showing both swimming and riding); any other single
    /// session (a plain run, ride or pool swim) keeps its own sport, pool and lap length.
    public var autoSegment: Bool
    /// Import what precedes damage in a damaged file (on by default): the workout is flagged
    /// (`ImportMetadataKey.damage`) and the damage reported as an anomaly with its byte offset. Off,
    /// a damaged file is refused whole (FIT; a damaged Apple Health workout is always refused whole).
    public var salvage: Bool
    /// Mixed into the seed of the workouts' ids (0: the ids follow from the file alone). The server gives
    /// each athlete its own, so that two athletes importing the same file get two workouts with distinct ids.
    public var idSalt: UInt64
    /// The longest workout taken, seconds (nil: any); a workout spanning more is refused (FIT:
    /// `ImportError.outsideLimits`).
    public var longestSpan: TimeInterval?
    /// The latest end taken (nil: any); a workout ending later is refused (FIT: `ImportError.outsideLimits`).
    public var latestEnd: Date?

    public init(
        autoSegment: Bool = false, salvage: Bool = true, idSalt: UInt64 = 0, longestSpan: TimeInterval? = nil,
        latestEnd: Date? = nil
    ) {
        self.autoSegment = autoSegment
        self.salvage = salvage
        self.idSalt = idSalt
        self.longestSpan = longestSpan
        self.latestEnd = latestEnd
    }
}
