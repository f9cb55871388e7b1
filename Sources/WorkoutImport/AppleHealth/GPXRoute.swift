import Foundation
import WorkoutModel

/// Route points of an Apple Health `workout-routes/*.gpx` file (GPX 1.1: `trkpt lat lon` with `ele`,
/// `time` in UTC and un-namespaced `extensions/speed`, `course`, `hAcc`).
enum HealthGPX {
    /// `2025-09-26T17:00:18Z` (optionally with fractional seconds or an offset).
    static func time(_ text: String) -> Date? {
        var trimmed = trimming(text)
        guard trimmed.utf8.count >= 20 else { return nil }
        // The form Apple writes (`2025-09-26T17:00:18Z`) read directly from its bytes: a formatter per point is slow.
        // An impossible date in this form (2025-02-31) is refused here, not handed on to be rolled over.
        if trimmed.utf8.count == 20, trimmed.utf8.last == UInt8(ascii: "Z") {
            return trimmed.withUTF8 { HealthDate.parseUTC($0) }
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: trimmed) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: trimmed)
    }

    /// `text` without the white space and line ends around it (as `trimmingCharacters(in: .whitespacesAndNewlines)`,
    /// which is only called when the text starts or ends with anything but a printable ASCII character).
    static func trimming(_ text: String) -> String {
        let utf8 = text.utf8
        if let first = utf8.first, let last = utf8.last, first > 0x20, first < 0x7F, last > 0x20, last < 0x7F {
            return text
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The points of a GPX file (read through `read`) in time order; `keep` filters them as they are read.
    static func points(read: @escaping XMLPullParser.Read, keep: (Date) -> Bool = { _ in true }) throws(XMLStreamError)
        -> [RoutePoint]
    {
        let parser = XMLPullParser(read: read)
        // Only a point's attributes are read: every other start tag is checked in one sweep, no text made of it.
        parser.skipsAttributes = { element, _ in element != "trkpt" }
        var points: [RoutePoint] = []
        var current: (latitude: Double, longitude: Double)?
        // The last text of each child a point is read from (a dictionary by element name cost a hash per text).
        var fields = Fields()
        var element: String?
        while let event = try parser.next() {
            switch event {
            case .start(let name, let attributes):
                if name == "trkpt" {
                    let latitude = attributes.first { $0.name == "lat" }.flatMap { Double($0.value) }
                    let longitude = attributes.first { $0.name == "lon" }.flatMap { Double($0.value) }
                    if let latitude, let longitude { current = (latitude, longitude) } else { current = nil }
                    fields = Fields()
                } else {
                    element = name
                }
            case .text(let text):
                if current != nil, let element { fields.set(element, text) }
            case .end(let name):
                element = nil
                guard name == "trkpt", let point = current else { continue }
                current = nil
                guard let date = fields.time.flatMap(time), keep(date) else { continue }
                func number(_ text: String?) -> Double? {
                    text.flatMap { Double(trimming($0)) }.flatMap {
                        $0.isFinite ? $0 : nil
                    }
                }
                let routePoint = RoutePoint(
                    date: date, latitude: point.latitude, longitude: point.longitude, altitude: number(fields.ele),
                    speed: number(fields.speed).flatMap { $0 >= 0 ? $0 : nil },
                    course: number(fields.course).flatMap { $0 >= 0 && $0 < 360 ? $0 : nil },
                    horizontalAccuracy: number(fields.hAcc).flatMap { $0 >= 0 ? $0 : nil })
                if routePoint.isValid { points.append(routePoint) }
            }
        }
        return points.sorted { $0.date < $1.date }
    }

    /// The texts of a point's children that are read (`time`, `ele`, and the extensions' `speed`, `course`, `hAcc`):
    /// the last text of each, as the point's element gives them; every other child's text is not kept.
    private struct Fields {
        var time: String?
        var ele: String?
        var speed: String?
        var course: String?
        var hAcc: String?

        mutating func set(_ element: String, _ text: String) {
            switch element {
            case "time": time = text
            case "ele": ele = text
            case "speed": speed = text
            case "course": course = text
            case "hAcc": hAcc = text
            default: break
            }
        }
    }
}
