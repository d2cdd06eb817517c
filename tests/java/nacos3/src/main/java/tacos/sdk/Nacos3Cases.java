package tacos.sdk;

import com.alibaba.nacos.api.config.ConfigQueryResult;
import com.alibaba.nacos.api.config.ConfigService;
import com.alibaba.nacos.api.config.listener.AbstractFuzzyWatchEventWatcher;
import com.alibaba.nacos.api.config.listener.ConfigFuzzyWatchChangeEvent;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Cases of the 3.x client only (its API has what 2.x lacks). Called by Driver through reflection. */
public final class Nacos3Cases {

    private Nacos3Cases() {
    }

    public static Map<String, Driver.Case> cases(Driver d) {
        Map<String, Driver.Case> cases = new LinkedHashMap<>();
        cases.put("fuzzy_watch", () -> fuzzyWatch(d));
        return cases;
    }

    /** ConfigService.getConfigWithResult names the config's type (3.x). */
    public static void checkType(ConfigService s, String dataId, String group, String type) throws Exception {
        ConfigQueryResult r = s.getConfigWithResult(dataId, group, Driver.CALL_MS);
        Driver.check(r != null, "getConfigWithResult returned null");
        Driver.checkEq(r.getConfigType(), type, "getConfigWithResult type");
    }

    static void fuzzyWatch(Driver d) throws Exception {
        ConfigService s = d.client();
        ConfigService writer = d.client();
        String group = d.prefix + "fuzzy-group";
        String existing = d.prefix + "fuzzy-app-1.properties";
        String added = d.prefix + "fuzzy-app-2.properties";
        String other = d.prefix + "other.properties";
        Driver.check(writer.publishConfig(existing, group, "x=1"), "publishConfig " + existing);
        BlockingQueue<ConfigFuzzyWatchChangeEvent> events = new LinkedBlockingQueue<>();
        AbstractFuzzyWatchEventWatcher watcher = new AbstractFuzzyWatchEventWatcher() {
            @Override
            public void onEvent(ConfigFuzzyWatchChangeEvent event) {
                Driver.say("  fuzzy watch event " + event);
                events.add(event);
            }
        };
        // dataId pattern "{prefix}fuzzy-app-*" in the exact group.
        java.util.concurrent.Future<Set<String>> keys = s.fuzzyWatchWithGroupKeys(d.prefix + "fuzzy-app-*", group,
                watcher);
        Set<String> initial = keys.get(Driver.EVENT_WAIT_MS, TimeUnit.MILLISECONDS);
        Driver.check(initial.size() == 1 && initial.iterator().next().startsWith(existing + "+" + group),
                "fuzzyWatchWithGroupKeys initial keys " + initial);
        ConfigFuzzyWatchChangeEvent first = next(events, "the initial key");
        Driver.checkEq(first.getDataId(), existing, "initial event dataId");
        Driver.checkEq(first.getGroup(), group, "initial event group");
        Driver.checkEq(first.getChangedType(), "ADD_CONFIG", "initial event changedType");
        Driver.checkEq(first.getSyncType(), "FUZZY_WATCH_INIT_NOTIFY", "initial event syncType");
        // A key off the pattern, then one on it: only the latter is told.
        Driver.check(writer.publishConfig(other, group, "o=1"), "publishConfig " + other);
        Driver.check(writer.publishConfig(added, group, "y=1"), "publishConfig " + added);
        ConfigFuzzyWatchChangeEvent add = next(events, "the added key");
        Driver.checkEq(add.getDataId(), added, "add event dataId");
        Driver.checkEq(add.getChangedType(), "ADD_CONFIG", "add event changedType");
        Driver.checkEq(add.getSyncType(), "FUZZY_WATCH_RESOURCE_CHANGED", "add event syncType");
        // A content change of a key it knows is not an event.
        Driver.check(writer.publishConfig(added, group, "y=2"), "publishConfig y=2");
        Driver.check(writer.removeConfig(existing, group), "removeConfig " + existing);
        ConfigFuzzyWatchChangeEvent del = next(events, "the deleted key");
        Driver.checkEq(del.getDataId(), existing, "delete event dataId");
        Driver.checkEq(del.getChangedType(), "DELETE_CONFIG", "delete event changedType");
        ConfigFuzzyWatchChangeEvent extra = events.poll(Driver.QUIET_MS, TimeUnit.MILLISECONDS);
        Driver.check(extra == null, "unexpected fuzzy watch event " + extra);
        s.cancelFuzzyWatch(d.prefix + "fuzzy-app-*", group, watcher);
    }

    static ConfigFuzzyWatchChangeEvent next(BlockingQueue<ConfigFuzzyWatchChangeEvent> events, String what)
            throws InterruptedException {
        ConfigFuzzyWatchChangeEvent e = events.poll(Driver.EVENT_WAIT_MS, TimeUnit.MILLISECONDS);
        Driver.check(e != null, "no fuzzy watch event within " + Driver.EVENT_WAIT_MS + " ms (" + what + ")");
        return e;
    }
}
