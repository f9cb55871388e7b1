import Foundation
import WorkoutEngine
import WorkoutModel

/// Writes a workout as GPX 1.1: one track, a segment per activity, heart rate and cadence in
/// Garmin's TrackPointExtension (v1).
///
/// Track points are the route points (a pool swim has none); each carries the heart rate holding at
/// its time (the latest reading within 5 s) and the cadence of its second (strides per minute for
/// running, as Garmin writes it).
public enum GPXExport {
    public static func encode(_ workout: Workout, samples: [QuantitySample], route: [RoutePoint]) -> String {
        let timeline = ExportTimeline(workout: workout, samples: samples, route: route)
        let cadence = Dictionary(
            timeline.points.compactMap { point in
                point.cadence.map { (point.second, point.cadenceIsSteps ? $0 / 2 : $0) }
            }, uniquingKeysWith: { _, last in last })
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="workout-engine" xmlns="http://www.topografix.com/GPX/1/1" \
            xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1" \
            xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd \
            http://www.garmin.com/xmlschemas/TrackPointExtension/v1 \
            http://www8.garmin.com/xmlschemas/TrackPointExtensionv1.xsd">
              <metadata>
                <name>\(XML.escape(workout.activityType.rawValue)) \(XML.time(workout.start))</name>
                <time>\(XML.time(workout.start))</time>
              </metadata>
              <trk>
                <name>\(XML.escape(workout.activityType.rawValue))</name>
                <type>\(XML.escape(workout.activityType.rawValue))</type>

            """
        let points = route.sorted { $0.date < $1.date }
        for leg in timeline.legs {
            xml += "    <trkseg>\n"
            let last = leg.end == workout.end
            for point in points
            where point.date >= leg.start && (point.date < leg.end || (last && point.date <= leg.end)) {
                xml +=
                    "      <trkpt lat=\"\(XML.number(point.latitude, 7))\" lon=\"\(XML.number(point.longitude, 7))\">"
                if let altitude = point.altitude { xml += "<ele>\(XML.number(altitude, 1))</ele>" }
                xml += "<time>\(XML.time(point.date))</time>"
                let heartRate = timeline.heartRate(at: point.date).flatMap { FITExport.byte($0, limit: 255) }
                let rpm = ExportTimeline.second(point.date).flatMap { cadence[$0] }.flatMap { FITExport.byte($0) }
                if heartRate != nil || rpm != nil {
                    xml += "<extensions><gpxtpx:TrackPointExtension>"
                    if let heartRate { xml += "<gpxtpx:hr>\(heartRate)</gpxtpx:hr>" }
                    if let rpm { xml += "<gpxtpx:cad>\(rpm)</gpxtpx:cad>" }
                    xml += "</gpxtpx:TrackPointExtension></extensions>"
                }
                xml += "</trkpt>\n"
            }
            xml += "    </trkseg>\n"
        }
        xml += "  </trk>\n</gpx>\n"
        return xml
    }
}

/// Writes a workout as TCX (Training Center Database v2): a `MultiSportSession` for a workout with
/// several activities (transitions as the `Transition` of the next sport), else one `Activity`.
///
/// TCX knows the sports Running, Biking and Other (swims are Other). Each activity's laps are its
/// lap events (pool swims: its runs of lengths are not laps here, the activity is one lap); track
/// points are the seconds with data: time, position, altitude, cumulative distance, heart rate,
/// cadence, and speed and watts in the ActivityExtension (v2).
public enum TCXExport {
    public static func encode(_ workout: Workout, samples: [QuantitySample], route: [RoutePoint]) -> String {
        let timeline = ExportTimeline(workout: workout, samples: samples, route: route)
        var xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <TrainingCenterDatabase xmlns="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2" \
            xmlns:ns3="http://www.garmin.com/xmlschemas/ActivityExtension/v2" \
            xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:schemaLocation="http://www.garmin.com/xmlschemas/TrainingCenterDatabase/v2 \
            http://www.garmin.com/xmlschemas/TrainingCenterDatabasev2.xsd">
              <Activities>

            """
        let legs = timeline.legs
        if legs.count == 1 || workout.activities.isEmpty {
            xml += activity(legs[0], timeline: timeline, indent: "    ")
        } else {
            xml += "    <MultiSportSession>\n      <Id>\(XML.time(workout.start))</Id>\n"
            var first = true
            var transition: ExportTimeline.Leg?
            for leg in legs {
                if leg.configuration.activityType == .transition, !first, transition == nil {
                    transition = leg
                    continue
                }
                if first {
                    xml += "      <FirstSport>\n" + activity(leg, timeline: timeline, indent: "        ")
                    xml += "      </FirstSport>\n"
                    first = false
                } else {
                    xml += "      <NextSport>\n"
                    if let transition {
                        xml += laps(of: transition, timeline: timeline, indent: "        ", element: "Transition")
                    }
                    xml += activity(leg, timeline: timeline, indent: "        ") + "      </NextSport>\n"
                    transition = nil
                }
            }
            if let transition {
                // A transition at the end has no sport after it: it is an activity of its own.
                xml += "      <NextSport>\n" + activity(transition, timeline: timeline, indent: "        ")
                xml += "      </NextSport>\n"
            }
            xml += "    </MultiSportSession>\n"
        }
        xml += "  </Activities>\n</TrainingCenterDatabase>\n"
        return xml
    }

    static func sport(_ type: WorkoutActivityType) -> String {
        switch type {
        case .running, .walking: "Running"
        case .cycling: "Biking"
        case .swimming, .transition, .swimBikeRun, .other, .paddleSports: "Other"
        }
    }

    static func activity(_ leg: ExportTimeline.Leg, timeline: ExportTimeline, indent: String) -> String {
        var xml = "\(indent)<Activity Sport=\"\(sport(leg.configuration.activityType))\">\n"
        xml += "\(indent)  <Id>\(XML.time(leg.start))</Id>\n"
        xml += laps(of: leg, timeline: timeline, indent: indent + "  ", element: "Lap")
        xml += "\(indent)</Activity>\n"
        return xml
    }

    /// The leg's laps (its lap events, or the whole leg) as `element`s (`Lap` or `Transition`).
    static func laps(of leg: ExportTimeline.Leg, timeline: ExportTimeline, indent: String, element: String) -> String {
        var spans = timeline.laps.filter { $0.start >= leg.start && $0.start < leg.end }.map {
            ($0.start, min($0.end, leg.end))
        }
        if spans.isEmpty || element == "Transition" { spans = [(leg.start, leg.end)] }
        let isLast = leg.end == timeline.workout.end
        var xml = ""
        for (start, end) in spans {
            let stats = timeline.statistics(from: start, to: end)
            xml += "\(indent)<\(element) StartTime=\"\(XML.time(start))\">\n"
            xml += "\(indent)  <TotalTimeSeconds>\(XML.number(stats.duration, 3))</TotalTimeSeconds>\n"
            xml += "\(indent)  <DistanceMeters>\(XML.number(stats.distance ?? 0, 2))</DistanceMeters>\n"
            let energy = leg.statistics[.activeEnergyBurned]?.sum?.doubleValue(for: .kilocalorie) ?? 0
            let share = leg.end > leg.start ? end.timeIntervalSince(start) / leg.end.timeIntervalSince(leg.start) : 1
            xml += "\(indent)  <Calories>\(FITExport.word(energy * share) ?? 0)</Calories>\n"
            if let average = stats.average.flatMap({ FITExport.byte($0, limit: 255) }), average > 0 {
                xml += "\(indent)  <AverageHeartRateBpm><Value>\(average)</Value></AverageHeartRateBpm>\n"
            }
            if let maximum = stats.maximum.flatMap({ FITExport.byte($0, limit: 255) }), maximum > 0 {
                xml += "\(indent)  <MaximumHeartRateBpm><Value>\(maximum)</Value></MaximumHeartRateBpm>\n"
            }
            xml += "\(indent)  <Intensity>Active</Intensity>\n\(indent)  <TriggerMethod>Manual</TriggerMethod>\n"
            xml += "\(indent)  <Track>\n"
            let startSecond = ExportTimeline.second(start) ?? 0
            let endSecond = ExportTimeline.second(end) ?? 0
            for point in timeline.points
            where point.second >= startSecond && (point.second < endSecond || (isLast && point.second == endSecond)) {
                xml += trackpoint(point, indent: indent + "    ")
            }
            xml += "\(indent)  </Track>\n\(indent)</\(element)>\n"
        }
        return xml
    }

    static func trackpoint(_ point: ExportTimeline.Point, indent: String) -> String {
        var xml = "\(indent)<Trackpoint><Time>\(XML.time(FITTime.date(Double(point.second))))</Time>"
        if let latitude = point.latitude, let longitude = point.longitude {
            xml += "<Position><LatitudeDegrees>\(XML.number(latitude, 7))</LatitudeDegrees>"
            xml += "<LongitudeDegrees>\(XML.number(longitude, 7))</LongitudeDegrees></Position>"
        }
        if let altitude = point.altitude { xml += "<AltitudeMeters>\(XML.number(altitude, 1))</AltitudeMeters>" }
        if let distance = point.distance { xml += "<DistanceMeters>\(XML.number(distance, 2))</DistanceMeters>" }
        if let heartRate = point.heartRate.flatMap({ FITExport.byte($0, limit: 255) }), heartRate > 0 {
            xml += "<HeartRateBpm><Value>\(heartRate)</Value></HeartRateBpm>"
        }
        let rpm = point.cadence.flatMap { FITExport.byte(point.cadenceIsSteps ? $0 / 2 : $0) }
        if let rpm, !point.cadenceIsSteps { xml += "<Cadence>\(rpm)</Cadence>" }
        if point.speed != nil || point.power != nil || (rpm != nil && point.cadenceIsSteps) {
            xml += "<Extensions><ns3:TPX>"
            if let speed = point.speed { xml += "<ns3:Speed>\(XML.number(speed, 3))</ns3:Speed>" }
            if let rpm, point.cadenceIsSteps { xml += "<ns3:RunCadence>\(rpm)</ns3:RunCadence>" }
            if let power = point.power.flatMap({ FITExport.word($0) }) { xml += "<ns3:Watts>\(power)</ns3:Watts>" }
            xml += "</ns3:TPX></Extensions>"
        }
        return xml + "</Trackpoint>\n"
    }
}

/// Small XML helpers.
enum XML {
    static func escape(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            default: result.append(character)
            }
        }
        return result
    }

    /// ISO 8601 in UTC, with milliseconds only when the date has a fraction.
    static func time(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        let style =
            seconds == seconds.rounded()
            ? Date.ISO8601FormatStyle() : Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return date.formatted(style)
    }

    /// A number with at most `decimals` decimals, no trailing zeros, never exponent notation.
    static func number(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var text = String(format: "%.\(decimals)f", value)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text == "-0" ? "0" : text
    }
}
