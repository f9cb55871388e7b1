import Foundation
import WorkoutModel

/// Parses the RFC 3339 dates clients send (`2026-05-01T07:30:00Z`, `…:00.250Z`, `…:00+02:00`) without a
/// formatter: the only parser of client dates (query parameters and JSON bodies), total and bounded.
///
/// Taken: a four-digit year from `minimumYear` to `maximumYear`, `-`, two-digit month and day, `T` (or `t`),
/// two-digit hours, minutes and seconds, optionally a fraction of 1 to `maximumFractionDigits` digits, then `Z`
/// (or `z`) or a `±HH:MM` offset; every field in range (no leap second, no 24:00). Anything else is nil: never
/// handed to Foundation's `ISO8601DateFormatter` (ICU crashed the process on a fraction of 35 digits and misread
/// years of more than four digits). The fraction is kept to the millisecond (digits beyond are read and
/// dropped), as the API writes dates; within the range the date is bit for bit the formatter's.
enum FastISODate {
    /// The first year a client date may have.
    static let minimumYear = 1900
    /// The last year a client date may have.
    static let maximumYear = 2200
    /// The most digits of a fraction of a second.
    static let maximumFractionDigits = 9
    /// The longest date taken: 19 characters, a point and the fraction, a `±HH:MM` offset.
    static let maximumLength = 19 + 1 + maximumFractionDigits + 6

    /// What a client date must look like (for error messages).
    static let expectedForm =
        "an RFC 3339 date such as 2026-05-01T07:30:00Z or 2026-05-01T09:30:00.250+02:00 "
        + "(at most \(maximumFractionDigits) fraction digits, years \(minimumYear)–\(maximumYear))"

    static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        let count = bytes.count
        guard count >= 20, count <= maximumLength else { return nil }
        func digits(_ start: Int, _ length: Int) -> Int? {
            var value = 0
            for index in start..<(start + length) {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = digits(0, 4), bytes[4] == 0x2D, let month = digits(5, 2), bytes[7] == 0x2D,
            let day = digits(8, 2), bytes[10] == 0x54 || bytes[10] == 0x74, let hour = digits(11, 2), bytes[13] == 0x3A,
            let minute = digits(14, 2), bytes[16] == 0x3A, let second = digits(17, 2)
        else { return nil }
        guard year >= minimumYear, year <= maximumYear, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24,
            minute < 60, second < 60
        else { return nil }
        var index = 19
        var milliseconds = 0
        if bytes[index] == 0x2E {
            index += 1
            var length = 0
            while index < count, length <= maximumFractionDigits, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                if length < 3 { milliseconds = milliseconds * 10 + Int(bytes[index] - 0x30) }
                index += 1
                length += 1
            }
            guard (1...maximumFractionDigits).contains(length) else { return nil }
            for _ in min(length, 3)..<3 { milliseconds *= 10 }
        }
        guard index < count else { return nil }
        var offset = 0
        switch bytes[index] {
        case 0x5A, 0x7A:
            index += 1
        case 0x2B, 0x2D:
            guard count - index == 6, let hours = digits(index + 1, 2), bytes[index + 3] == 0x3A,
                let minutes = digits(index + 4, 2), hours < 24, minutes < 60
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == 0x2D ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == count else { return nil }
        let seconds = CivilDays.days(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
            - offset
        // As ICU computes it: milliseconds since 1970 as a double, then seconds since 2001.
        let unixMilliseconds = Double(seconds) * 1_000 + Double(milliseconds)
        return Date(timeIntervalSinceReferenceDate: unixMilliseconds / 1_000 - Date.timeIntervalBetween1970AndReferenceDate)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
