import Foundation
import WorkoutModel

/// A date of an Apple Health export: `2025-09-13 15:39:17 +0100` (from 2016), or the compact
/// `20150915113529+0200` of iOS 8 exports. Nil when the text is neither.
enum HealthDate {
    static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { whole in parse(bytes: whole) }
    }

    /// `parse` of the text these bytes spell (UTF-8).
    static func parse(bytes whole: UnsafeBufferPointer<UInt8>) -> Date? {
        var count = whole.count
        while count > 0, whole[count - 1] == 0x20 { count -= 1 }
        return parse(UnsafeBufferPointer(rebasing: whole[0..<count]))
    }

    /// The decimal number the ASCII digits of `utf8[range]` spell; nil when the range runs past the end or holds
    /// anything but digits.
    private static func digits(_ utf8: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        guard range.upperBound <= utf8.count else { return nil }
        var value = 0
        for index in range {
            let byte = utf8[index]
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    private static func parse(_ utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        func number(_ range: Range<Int>) -> Int? { digits(utf8, range) }
        let fields: (Int, Int, Int, Int, Int, Int, Int)
        let zone: Int
        if utf8.count == 25, utf8[4] == 0x2D, utf8[7] == 0x2D, utf8[10] == 0x20, utf8[13] == 0x3A, utf8[16] == 0x3A,
            utf8[19] == 0x20
        {
            guard let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
                let mi = number(14..<16), let s = number(17..<19), let oh = number(21..<23), let om = number(23..<25)
            else { return nil }
            fields = (y, mo, d, h, mi, s, 0)
            zone = 20
            guard utf8[zone] == 0x2B || utf8[zone] == 0x2D else { return nil }
            return make(fields, offset: (utf8[zone] == 0x2D ? -1 : 1) * (oh * 3600 + om * 60))
        } else if utf8.count == 19, utf8[14] == 0x2B || utf8[14] == 0x2D {
            guard let y = number(0..<4), let mo = number(4..<6), let d = number(6..<8), let h = number(8..<10),
                let mi = number(10..<12), let s = number(12..<14), let oh = number(15..<17), let om = number(17..<19)
            else { return nil }
            fields = (y, mo, d, h, mi, s, 0)
            return make(fields, offset: (utf8[14] == 0x2D ? -1 : 1) * (oh * 3600 + om * 60))
        }
        return nil
    }

    /// A GPX time in the form Apple writes, `2025-09-26T17:00:18Z` (UTC), from its bytes; nil when it is not one
    /// or not a date.
    static func parseUTC(_ utf8: UnsafeBufferPointer<UInt8>) -> Date? {
        guard utf8.count == 20, utf8[4] == 0x2D, utf8[7] == 0x2D, utf8[10] == UInt8(ascii: "T"), utf8[13] == 0x3A,
            utf8[16] == 0x3A, utf8[19] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? { digits(utf8, range) }
        guard let y = number(0..<4), let mo = number(5..<7), let d = number(8..<10), let h = number(11..<13),
            let mi = number(14..<16), let s = number(17..<19)
        else { return nil }
        return make((y, mo, d, h, mi, s, 0), offset: 0)
    }

    /// `date` as local time in `zone`, as `ISO8601DateFormatter` with `.withInternetDateTime` writes it
    /// (`2017-06-30T07:30:13+02:00`, `Z` at offset 0), without making a formatter for each workout (which cost an
    /// import more than the rest of its metadata). Written here: a whole second (every date an export's text gives)
    /// of the years 1900-9999 in a zone whose offset is whole minutes; anything else (a fraction, which the formatter
    /// rounds to the millisecond; a year before 1583, which it writes in the Julian calendar; an offset with seconds)
    /// is the formatter's.
    static func internetDateTime(_ date: Date, in zone: TimeZone) -> String {
        let offset = zone.secondsFromGMT(for: date)
        let whole = date.timeIntervalSince1970.rounded(.down)
        guard offset % 60 == 0, whole == date.timeIntervalSince1970, abs(whole) < 1e12 else {
            return formatted(date, in: zone)
        }
        let local = Int(whole) + offset
        let days = local >= 0 ? local / 86400 : (local - 86399) / 86400
        let second = local - days * 86400
        let (year, month, day) = CivilDays.date(days: days)
        guard (1900...9999).contains(year) else { return formatted(date, in: zone) }
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var text = "\(year)-\(two(month))-\(two(day))T\(two(second / 3600)):\(two(second / 60 % 60)):\(two(second % 60))"
        if offset == 0 {
            text += "Z"
        } else {
            text += (offset < 0 ? "-" : "+") + two(abs(offset) / 3600) + ":" + two(abs(offset) / 60 % 60)
        }
        return text
    }

    /// `internetDateTime` by `ISO8601DateFormatter` itself.
    static func formatted(_ date: Date, in zone: TimeZone) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = zone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }

    private static func make(_ f: (Int, Int, Int, Int, Int, Int, Int), offset: Int) -> Date? {
        let (year, month, day, hour, minute, second, _) = f
        // A day past its month's end (2025-02-31) or a 60th second is no date: refused, never rolled over.
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let monthDays: Int
        switch month {
        case 2: monthDays = leap ? 29 : 28
        case 4, 6, 9, 11: monthDays = 30
        default: monthDays = 31
        }
        guard (1...12).contains(month), (1...monthDays).contains(day), hour < 24, minute < 60, second < 60,
            (1900...2200).contains(year), abs(offset) <= 18 * 3600
        else { return nil }
        let seconds = CivilDays.days(year: year, month: month, day: day) * 86400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}

/// A `MetadataEntry` list read as a map (exports repeat a workout's whole list; the last wins).
typealias HealthMetadata = [String: String]

/// Where an element of the export starts: line and column.
public struct HealthLocation: Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var description: String { "line \(line), column \(column)" }
}

/// One `WorkoutEvent`.
struct HealthEvent: Sendable, Hashable {
    var type: String
    var date: Date
    var duration: TimeInterval
    var metadata: HealthMetadata
}

/// One `WorkoutStatistics`: what the export states for one type over a workout or activity.
struct HealthStatistic: Sendable, Hashable {
    var type: String
    var start: Date?
    var end: Date?
    var sum: Double?
    var average: Double?
    var minimum: Double?
    var maximum: Double?
    var unit: String?
}

/// One `WorkoutRoute`: its window and its GPX file or inline points.
struct HealthRoute: Sendable, Hashable {
    var start: Date?
    var end: Date?
    var file: String?
    var locations: [RoutePoint] = []
}

/// One `WorkoutActivity` (iOS 16+).
struct HealthActivity: Sendable, Hashable {
    var uuid: String?
    var start: Date
    var end: Date
    var duration: TimeInterval?
    var events: [HealthEvent] = []
    var statistics: [HealthStatistic] = []
    var metadata: HealthMetadata = [:]
}

/// A workout as the export states it.
struct HealthWorkout: Sendable {
    var location: HealthLocation
    var activityType: String
    var duration: TimeInterval?
    var sourceName: String
    var sourceVersion: String?
    var device: String?
    var start: Date
    var end: Date
    var metadata: HealthMetadata = [:]
    var events: [HealthEvent] = []
    var activities: [HealthActivity] = []
    var statistics: [HealthStatistic] = []
    var routes: [HealthRoute] = []
    /// Old shape (Export Version ≤ 11): totals as attributes.
    var totalDistance: (value: Double, unit: String)?
    var totalEnergy: (value: Double, unit: String)?
    /// Why the workout cannot be imported, when something in it is impossible.
    var damage: String?
    /// Where its element is in the export: its start tag's position and the offset just past its end tag (to read
    /// it again by itself).
    var span: (start: XMLPosition, end: Int)?

    /// The `hardware:` of the `HKDevice` description (`Watch7,2`; the value holds a comma).
    var hardware: String? {
        guard let device, let range = device.range(of: "hardware:") else { return nil }
        let rest = device[range.upperBound...]
        guard let end = rest.range(of: ", software:") ?? rest.range(of: ">") else { return nil }
        return String(rest[..<end.lowerBound])
    }

    /// The `name:` of the `HKDevice` description.
    var deviceName: String? {
        guard let device, let range = device.range(of: "name:") else { return nil }
        let rest = device[range.upperBound...]
        guard let end = rest.firstIndex(of: ",") else { return nil }
        return String(rest[..<end])
    }
}

/// A quantity `Record` of a type the engine knows, compact (records are many).
struct HealthRecord: Sendable {
    var type: QuantityType
    var value: Double
    var start: Date
    var end: Date
    /// Index into the reader's source table.
    var source: Int32
}

/// A `HKQuantityTypeIdentifierHeartRateRecoveryOneMinute` record.
struct HealthRecoveryRecord: Sendable {
    var value: Double
    var date: Date
    var source: String
    var metadata: HealthMetadata
}
