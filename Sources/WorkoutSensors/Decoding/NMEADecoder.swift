#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Distance travelled along a series of GPS fixes, by the haversine formula on a sphere of the
/// Earth's mean radius (6,371,008.8 m; on a 40 km ride the error against the ellipsoid is below 0.5 %).
///
/// Only valid fixes count. A fix with the same UTC time as the previous counted one adds nothing (a
/// receiver sends GGA and RMC for the same epoch). A gap in fixes (no fix, a disconnect) adds the
/// straight line from the last fix to the next, as watches do; `reset()` starts a new track instead.
public struct DistanceAccumulator: Sendable, Hashable {
    /// The Earth's mean radius, metres.
    public static let earthRadius = 6_371_008.8

    /// Metres so far.
    public private(set) var total = 0.0
    private var lastLatitude = 0.0
    private var lastLongitude = 0.0
    private var lastTime: Double?
    private var hasLast = false

    public init() {}

    /// Adds a valid fix at `time` (seconds of any clock, nil when unknown); returns the total.
    @discardableResult
    public mutating func add(latitude: Double, longitude: Double, time: Double?) -> Double {
        guard latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180 else { return total }
        if hasLast {
            if let time, let lastTime, abs(time - lastTime) < 0.0005 { return total }
            let step = Self.haversine(lastLatitude, lastLongitude, latitude, longitude)
            if step.isFinite { total += step }
        }
        lastLatitude = latitude
        lastLongitude = longitude
        lastTime = time
        hasLast = true
        return total
    }

    /// Forgets the last fix: the next one starts a new track (the total is kept).
    public mutating func reset() {
        hasLast = false
        lastTime = nil
    }

    /// Great-circle distance in metres between two points given in degrees.
    public static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let phi1 = lat1 * radians
        let phi2 = lat2 * radians
        let dPhi = (lat2 - lat1) * radians
        let dLambda = (lon2 - lon1) * radians
        let sinPhi = sin(dPhi / 2)
        let sinLambda = sin(dLambda / 2)
        let a = sinPhi * sinPhi + cos(phi1) * cos(phi2) * sinLambda * sinLambda
        return 2 * earthRadius * asin(min(1, max(0, a)).squareRoot())
    }
}

/// Streaming NMEA 0183 decoder: GGA and RMC sentences from any talker, checksums checked.
///
/// Yields a `GPSFix` per sentence (an invalid fix too, with `isValid` false: the receiver is there but
/// has no fix) with the UTC time as `SensorTime.utc`: RMC carries the date; a GGA gets the date of the
/// last RMC (moved on a day if its time of day wrapped past midnight). Speed over ground is converted
/// from knots to m/s (1 kn = 1852/3600 m/s). `GPSFix.totalDistance` is the `DistanceAccumulator`'s
/// total over the valid fixes seen so far.
///
/// Other sentences with a good checksum (GSA, GSV, VTG, proprietary `$P…`) are counted as unknown.
/// A sentence longer than `maxLineLength` bytes (NMEA allows 82) is dropped and counted.
public struct NMEADecoder: SensorDecoder {
    /// Longest line kept, `$` to LF (16 to 65,536).
    public let maxLineLength: Int
    public private(set) var counters = DecoderCounters()
    /// The distance over the valid fixes so far.
    public private(set) var distance = DistanceAccumulator()
    private var carry = CarryBuffer()
    /// The date and time of day of the last RMC, for GGA sentences.
    private var lastDate: CivilDate?
    private var lastSecondsOfDay = 0.0

    private static let gga = Parse.word("GGA")
    private static let rmc = Parse.word("RMC")
    private static let knot = 1852.0 / 3600.0

    public init(maxLineLength: Int = 256) {
        self.maxLineLength = min(max(16, maxLineLength), 1 << 16)
    }

    /// Bytes of a sentence not yet complete.
    public var pendingByteCount: Int { carry.bytes.count }

    public mutating func decode(_ chunk: UnsafeRawBufferPointer, into readings: inout [SensorReading]) {
        var counts = counters
        counts.bytesConsumed &+= chunk.count
        var carry = CarryBuffer()
        swap(&carry, &self.carry)
        let maxLength = maxLineLength
        carry.feed(chunk) { bytes in
            scanLines(bytes, maxLength: maxLength, counters: &counts) { body in
                sentence(body, into: &readings)
            }
        }
        swap(&carry, &self.carry)
        counters = counts
    }

    public mutating func connectionLost() {
        counters.bytesDroppedOnDisconnect &+= carry.removeAll()
    }

    private mutating func sentence(_ body: UnsafeRawBufferPointer, into readings: inout [SensorReading]) -> LineOutcome
    {
        var fields = Fields(body)
        guard let address = fields.next(), address.count == 5, body[address.lowerBound] != UInt8(ascii: "P") else {
            return .unknown
        }
        let talker = NMEATalker(body[address.lowerBound], body[address.lowerBound &+ 1])
        switch Parse.word(body, (address.lowerBound &+ 2)..<address.upperBound) {
        case Self.gga: return gga(&fields, talker: talker, into: &readings)
        case Self.rmc: return rmc(&fields, talker: talker, into: &readings)
        default: return .unknown
        }
    }

    /// `hhmmss[.ss]` as seconds of the day.
    private static func timeOfDay(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Double?? {
        if range.isEmpty { return .some(nil) }
        guard range.count >= 6, let (negative, whole, fraction) = Parse.fixedPoint(bytes, range), !negative else {
            return nil
        }
        let hours = whole / 10_000
        let minutes = whole / 100 % 100
        let seconds = whole % 100
        guard hours < 24, minutes < 60, seconds < 61 else { return nil }
        return Double(hours * 3600 + minutes * 60 + seconds) + fraction
    }

    /// `ddmm.mmmm` (or `dddmm.mmmm`) + hemisphere as signed degrees; `.some(nil)` when both are empty.
    private static func coordinate(
        _ bytes: UnsafeRawBufferPointer, _ value: Range<Int>, _ hemisphere: Range<Int>, maxDegrees: Int,
        negative: UInt8, positive: UInt8
    ) -> Double?? {
        if value.isEmpty && hemisphere.isEmpty { return .some(nil) }
        guard hemisphere.count == 1, let (sign, whole, fraction) = Parse.fixedPoint(bytes, value), !sign else {
            return nil
        }
        let degrees = whole / 100
        let minutes = Double(whole % 100) + fraction
        guard degrees <= maxDegrees, minutes < 60 else { return nil }
        let angle = Double(degrees) + minutes / 60
        guard angle <= Double(maxDegrees) else { return nil }
        switch bytes[hemisphere.lowerBound] {
        case positive: return angle
        case negative: return -angle
        default: return nil
        }
    }

    /// An optional decimal field: `.some(nil)` when empty, nil when unparsable.
    private static func optionalDecimal(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Double?? {
        if range.isEmpty { return .some(nil) }
        guard let value = Parse.decimal(bytes, range) else { return nil }
        return value
    }

    // GGA: time, lat, N/S, lon, E/W, quality, satellites, HDOP, altitude, M, geoid separation, M, age, station.
    private mutating func gga(
        _ fields: inout Fields, talker: NMEATalker, into readings: inout [SensorReading]
    )
        -> LineOutcome
    {
        let bytes = fields.bytes
        guard let timeField = fields.next(), let latField = fields.next(), let northField = fields.next(),
            let lonField = fields.next(), let eastField = fields.next(), let qualityField = fields.next(),
            let satellitesField = fields.next(), let hdopField = fields.next(), let altitudeField = fields.next()
        else { return .malformed }
        guard let time = Self.timeOfDay(bytes, timeField),
            let latitude = Self.coordinate(
                bytes, latField, northField, maxDegrees: 90, negative: UInt8(ascii: "S"), positive: UInt8(ascii: "N")),
            let longitude = Self.coordinate(
                bytes, lonField, eastField, maxDegrees: 180, negative: UInt8(ascii: "W"),
                positive: UInt8(ascii: "E")),
            let hdop = Self.optionalDecimal(bytes, hdopField),
            let altitude = Self.optionalDecimal(bytes, altitudeField)
        else { return .malformed }
        var quality: UInt8?
        if !qualityField.isEmpty {
            guard let value = Parse.unsigned(bytes, qualityField), value <= 9 else { return .malformed }
            quality = UInt8(truncatingIfNeeded: value)
        }
        var satellites: Int?
        if !satellitesField.isEmpty {
            guard let value = Parse.unsigned(bytes, satellitesField), value < 1000 else { return .malformed }
            satellites = value
        }
        var utc: UTCTime?
        if let time {
            var date = lastDate
            if let known = date, time < lastSecondsOfDay - 43_200 { date = known.next }  // past midnight
            utc = UTCTime(secondsOfDay: time, date: date)
        }
        let valid = (quality ?? 0) > 0 && latitude != nil && longitude != nil
        if valid, let latitude, let longitude {
            distance.add(latitude: latitude, longitude: longitude, time: time)
        }
        let fix = GPSFix(
            sentence: .gga, isValid: valid, latitude: latitude, longitude: longitude, fixQuality: quality,
            satellites: satellites, hdop: hdop, altitude: altitude, totalDistance: distance.total)
        readings.append(SensorReading(source: .nmea(talker: talker), time: utc.map(SensorTime.utc), value: .fix(fix)))
        return .decoded
    }

    // RMC: time, status, lat, N/S, lon, E/W, speed (kn), course, date, variation, E/W[, mode[, nav status]].
    private mutating func rmc(
        _ fields: inout Fields, talker: NMEATalker, into readings: inout [SensorReading]
    )
        -> LineOutcome
    {
        let bytes = fields.bytes
        guard let timeField = fields.next(), let statusField = fields.next(), let latField = fields.next(),
            let northField = fields.next(), let lonField = fields.next(), let eastField = fields.next(),
            let speedField = fields.next(), let courseField = fields.next(), let dateField = fields.next()
        else { return .malformed }
        _ = fields.next()  // magnetic variation
        _ = fields.next()  // its direction
        let modeField = fields.next()
        guard statusField.count == 1,
            let time = Self.timeOfDay(bytes, timeField),
            let latitude = Self.coordinate(
                bytes, latField, northField, maxDegrees: 90, negative: UInt8(ascii: "S"), positive: UInt8(ascii: "N")),
            let longitude = Self.coordinate(
                bytes, lonField, eastField, maxDegrees: 180, negative: UInt8(ascii: "W"),
                positive: UInt8(ascii: "E")),
            let knots = Self.optionalDecimal(bytes, speedField),
            let course = Self.optionalDecimal(bytes, courseField)
        else { return .malformed }
        var date: CivilDate?
        if !dateField.isEmpty {
            guard dateField.count == 6, let value = Parse.unsigned(bytes, dateField) else { return .malformed }
            let day = value / 10_000
            let month = value / 100 % 100
            let year = value % 100
            guard (1...31).contains(day), (1...12).contains(month) else { return .malformed }
            date = CivilDate(year: year < 80 ? 2000 + year : 1900 + year, month: month, day: day)
        }
        let status = bytes[statusField.lowerBound]
        guard status == UInt8(ascii: "A") || status == UInt8(ascii: "V") else { return .malformed }
        var modeValid = true
        if let modeField, modeField.count == 1 { modeValid = bytes[modeField.lowerBound] != UInt8(ascii: "N") }
        let valid = status == UInt8(ascii: "A") && modeValid && latitude != nil && longitude != nil
        var utc: UTCTime?
        if let time {
            if let date {
                lastDate = date
                lastSecondsOfDay = time
            }
            utc = UTCTime(secondsOfDay: time, date: date)
        }
        if valid, let latitude, let longitude {
            distance.add(latitude: latitude, longitude: longitude, time: time)
        }
        let fix = GPSFix(
            sentence: .rmc, isValid: valid, latitude: latitude, longitude: longitude,
            speed: knots.map { $0 * Self.knot },
            course: course, totalDistance: distance.total)
        readings.append(SensorReading(source: .nmea(talker: talker), time: utc.map(SensorTime.utc), value: .fix(fix)))
        return .decoded
    }
}
