import Foundation

/// FIT time: seconds since 1989-12-31T00:00:00Z (the protocol's `date_time`).
public enum FITTime {
    /// Seconds between the Unix epoch and the FIT epoch.
    public static let unixOffset: Double = 631_065_600
    /// Seconds between Foundation's reference date (2001-01-01) and the FIT epoch.
    public static let referenceOffset: Double = unixOffset - 978_307_200

    /// The date of a FIT time in seconds.
    @inline(__always)
    public static func date(_ fitSeconds: Double) -> Date {
        Date(timeIntervalSinceReferenceDate: fitSeconds + referenceOffset)
    }

    /// The FIT time in seconds of a date.
    @inline(__always)
    public static func seconds(_ date: Date) -> Double {
        date.timeIntervalSinceReferenceDate - referenceOffset
    }
}

/// One file header of a FIT file (a chained file has several).
public struct FITFileHeader: Sendable, Hashable {
    /// Where the header starts in the file.
    public var offset: Int
    /// 12 (legacy) or 14 bytes; larger sizes are allowed by the protocol and skipped over.
    public var headerSize: Int
    public var protocolVersion: UInt8
    public var profileVersion: UInt16
    /// Bytes of records after the header (the file CRC follows them).
    public var dataSize: Int
    /// The header CRC of a 14-byte header; 0 means the writer did not compute one.
    public var headerCRC: UInt16?
}

/// `file_id` (message 0): what the file is and which device wrote it.
public struct FITFileID: Sendable, Hashable {
    public var type: UInt8?
    public var manufacturer: UInt16?
    public var product: UInt16?
    public var serialNumber: UInt32?
    /// FIT seconds.
    public var timeCreated: UInt32?
    public var number: UInt16?
    public var productName: String?
}

/// `sport` (message 12).
public struct FITSport: Sendable, Hashable {
    public var sport: UInt8?
    public var subSport: UInt8?
    public var name: String?
}

/// `session` (message 18) or `lap` (message 19): the device's own summary of a span.
///
/// Times are FIT seconds; distances metres; speeds m/s (the enhanced fields when present).
public struct FITSummary: Sendable, Hashable {
    public var messageIndex: UInt16?
    public var timestamp: UInt32?
    public var startTime: UInt32?
    public var event: UInt8?
    public var eventType: UInt8?
    public var sport: UInt8?
    public var subSport: UInt8?
    public var totalElapsedTime: Double?
    public var totalTimerTime: Double?
    public var totalDistance: Double?
    /// `total_cycles`: strokes for swimming, strides for running, crank revolutions for cycling.
    public var totalCycles: UInt32?
    public var totalCalories: UInt16?
    public var avgSpeed: Double?
    public var maxSpeed: Double?
    public var avgHeartRate: UInt8?
    public var maxHeartRate: UInt8?
    public var minHeartRate: UInt8?
    public var avgCadence: UInt8?
    public var maxCadence: UInt8?
    public var avgPower: UInt16?
    public var maxPower: UInt16?
    /// Session: `first_lap_index`; lap: `first_length_index`.
    public var firstIndex: UInt16?
    /// Session: `num_laps`; lap: unused.
    public var numLaps: UInt16?
    public var numLengths: UInt16?
    public var numActiveLengths: UInt16?
    /// Session only: metres.
    public var poolLength: Double?
    public var poolLengthUnit: UInt8?
    public var avgSwolf: UInt16?
    /// Session: `trigger`; lap: `lap_trigger`.
    public var trigger: UInt8?
    /// Lap only.
    public var swimStroke: UInt8?
    public var intensity: UInt8?

    /// The span the summary covers by its own account: start_time … start_time + total_elapsed_time.
    public var declaredEnd: Double? {
        guard let startTime, let totalElapsedTime else { return nil }
        return Double(startTime) + totalElapsedTime
    }
}

/// `record` (message 20): one sample of the timeline.
public struct FITRecord: Sendable, Hashable {
    /// FIT seconds; nil when the record carried no timestamp (full or compressed).
    public var timestamp: UInt32?
    /// Semicircles.
    public var positionLat: Int32?
    public var positionLong: Int32?
    /// Metres (enhanced_altitude when present).
    public var altitude: Double?
    public var heartRate: UInt8?
    /// rpm (running: strides per minute).
    public var cadence: UInt8?
    /// Fraction of a cadence unit (1/128 resolution).
    public var fractionalCadence: Double?
    /// Cumulative metres.
    public var distance: Double?
    /// m/s (enhanced_speed when present).
    public var speed: Double?
    public var power: UInt16?
    /// Cumulative cycles (strokes while swimming): `total_cycles`, or `cycles` accumulated.
    public var totalCycles: UInt32?
    /// Metres of one step (`step_length`).
    public var stepLength: Double?

    public init(timestamp: UInt32? = nil) {
        self.timestamp = timestamp
    }
}

/// `event` (message 21).
public struct FITEvent: Sendable, Hashable {
    public var timestamp: UInt32?
    public var event: UInt8?
    public var eventType: UInt8?
    /// `data` (or `data16`); for timer events the timer trigger (0 manual, 1 auto).
    public var data: UInt32?
    public var eventGroup: UInt8?
}

/// `length` (message 101): one pool length.
public struct FITLength: Sendable, Hashable {
    public var messageIndex: UInt16?
    public var timestamp: UInt32?
    public var startTime: UInt32?
    public var totalElapsedTime: Double?
    public var totalTimerTime: Double?
    public var totalStrokes: UInt16?
    public var avgSpeed: Double?
    public var swimStroke: UInt8?
    public var avgSwimmingCadence: UInt8?
    /// 0 idle (rest), 1 active.
    public var lengthType: UInt8?
}

/// `activity` (message 34).
public struct FITActivity: Sendable, Hashable {
    public var timestamp: UInt32?
    public var totalTimerTime: Double?
    public var numSessions: UInt16?
    /// 0 manual, 1 auto_multi_sport.
    public var type: UInt8?
    public var event: UInt8?
    public var eventType: UInt8?
    public var localTimestamp: UInt32?
}

/// One heart beat reported by an `hr` message (message 132), as a swim strap stores them.
public struct FITHeartBeat: Sendable, Hashable {
    /// FIT seconds, with the fraction the strap measured.
    public var time: Double
    public var bpm: UInt8
}

/// Everything the decoder read from a FIT file (all chained parts), in file order.
public struct FITFile: Sendable, Hashable {
    public var headers: [FITFileHeader] = []
    public var fileIDs: [FITFileID] = []
    public var softwareVersion: UInt16?
    public var sports: [FITSport] = []
    public var sessions: [FITSummary] = []
    public var laps: [FITSummary] = []
    public var lengths: [FITLength] = []
    public var records: [FITRecord] = []
    public var events: [FITEvent] = []
    public var activities: [FITActivity] = []
    public var heartBeats: [FITHeartBeat] = []
    /// `hr` messages whose beats had no time reference yet (no `hr` message with a timestamp before them).
    public var unanchoredHeartBeats = 0
    /// Data messages by global message number, every kind (known or not).
    public var messageCounts: [UInt16: Int] = [:]
    /// Developer fields met (skipped: their bytes are stepped over).
    public var developerFieldsSkipped = 0
    /// Bytes after the last FIT file that do not start another one.
    public var trailingBytes = 0
    /// With `FITDecodeOptions.salvage`: the first damage met (its byte offset and what it is);
    /// everything before it was decoded, nothing after it.
    public var damage: FITError?

    public init() {}

    /// How many data messages of a global number the file has.
    public func count(_ message: UInt16) -> Int { messageCounts[message] ?? 0 }
}
