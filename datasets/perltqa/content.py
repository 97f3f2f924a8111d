"""Bilingual building blocks of generated PerLTQA characters (English, Chinese).

Every entry is an (en, zh) pair so that one seed gives the same characters in both
languages. Names follow the release's style (pinyin in English). Events and dialogues
carry details that the questions ask about, each worded so that it occurs verbatim in
both the memory and the gold answer (memory anchors, PerLTQA §3.2).
"""

from __future__ import annotations

SURNAMES = (
    ("Wang", "王"),
    ("Li", "李"),
    ("Zhang", "张"),
    ("Liu", "刘"),
    ("Chen", "陈"),
    ("Yang", "杨"),
    ("Zhao", "赵"),
    ("Huang", "黄"),
    ("Zhou", "周"),
    ("Wu", "吴"),
    ("Xu", "徐"),
    ("Sun", "孙"),
    ("Ma", "马"),
    ("Zhu", "朱"),
    ("Hu", "胡"),
    ("Guo", "郭"),
    ("He", "何"),
    ("Lin", "林"),
    ("Gao", "高"),
    ("Luo", "罗"),
)
GIVEN = {
    "male": (
        ("Xiaoming", "小明"),
        ("Wei", "伟"),
        ("Lei", "磊"),
        ("Qiang", "强"),
        ("Jun", "军"),
        ("Tao", "涛"),
        ("Hao", "浩"),
        ("Bo", "波"),
        ("Peng", "鹏"),
        ("Yu", "宇"),
        ("Jie", "杰"),
        ("Chao", "超"),
    ),
    "female": (
        ("Xiaohong", "小红"),
        ("Fang", "芳"),
        ("Jing", "静"),
        ("Min", "敏"),
        ("Li", "丽"),
        ("Yan", "燕"),
        ("Ting", "婷"),
        ("Xin", "欣"),
        ("Mei", "梅"),
        ("Yun", "云"),
        ("Lan", "兰"),
        ("Qian", "倩"),
    ),
}
GENDER = {"male": ("male", "男"), "female": ("female", "女")}
NICKNAMES = (
    ("Doudou", "豆豆"),
    ("Lele", "乐乐"),
    ("Xiaobao", "小宝"),
    ("Dazhuang", "大壮"),
    ("Tiantian", "甜甜"),
    ("Huzi", "虎子"),
    ("Mimi", "咪咪"),
    ("Xiaoyu", "小鱼"),
    ("Ahuan", "阿欢"),
    ("Niuniu", "妞妞"),
)
NATIONALITIES = (("China", "中国"), ("China", "中国"), ("China", "中国"), ("Singapore", "新加坡"), ("Canada", "加拿大"))
ETHNICITIES = (("Han", "汉族"), ("Han", "汉族"), ("Hui", "回族"), ("Manchu", "满族"), ("Zhuang", "壮族"))
LOOKS = (
    ("short black hair and glasses", "黑色短发，戴眼镜"),
    ("long curly hair and a warm smile", "长卷发，笑容温暖"),
    ("tall and slim with a ponytail", "个子高挑，扎着马尾"),
    ("a round face and bright eyes", "圆脸，眼睛明亮"),
    ("broad shoulders and a crew cut", "宽肩膀，平头"),
    ("freckles and shoulder-length hair", "有雀斑，齐肩发"),
)
HOBBIES = (
    ("photography", "摄影"),
    ("basketball", "篮球"),
    ("calligraphy", "书法"),
    ("hiking", "徒步"),
    ("cooking", "烹饪"),
    ("playing the guitar", "弹吉他"),
    ("swimming", "游泳"),
    ("chess", "下棋"),
    ("gardening", "园艺"),
    ("reading science fiction", "读科幻小说"),
    ("cycling", "骑行"),
    ("painting", "画画"),
)
ROLE_MODELS = (
    ("Marie Curie", "居里夫人"),
    ("Yuan Longping", "袁隆平"),
    ("Lu Xun", "鲁迅"),
    ("Qian Xuesen", "钱学森"),
    ("Lang Ping", "郎平"),
    ("Tu Youyou", "屠呦呦"),
)

# (occupation, title, employer, education, achievement, award)
CAREERS = (
    (
        ("software engineer", "软件工程师"),
        ("engineer", "工程师"),
        ("a technology company in Shenzhen", "深圳的一家科技公司"),
        ("a Bachelor's degree in Computer Science", "计算机科学学士学位"),
        ("led the launch of a mobile payment app", "主导上线了一款移动支付应用"),
        ("the Young Innovator Award", "青年创新奖"),
    ),
    (
        ("pediatric doctor", "儿科医生"),
        ("doctor", "医生"),
        ("Renji Hospital", "仁济医院"),
        ("a Doctor of Medicine degree from Fudan University", "复旦大学医学博士学位"),
        ("introduced a new asthma care plan for children", "推行了一套新的儿童哮喘护理方案"),
        ("the Outstanding Young Physician Prize", "优秀青年医师奖"),
    ),
    (
        ("high school history teacher", "高中历史老师"),
        ("teacher", "教师"),
        ("Beijing No. 4 High School", "北京四中"),
        ("a Master's degree in History", "历史学硕士学位"),
        ("wrote a popular textbook on the Silk Road", "编写了一本广受欢迎的丝绸之路教材"),
        ("the City Excellent Teacher Award", "市级优秀教师奖"),
    ),
    (
        ("architect", "建筑师"),
        ("architect", "建筑师"),
        ("a design institute in Shanghai", "上海的一家设计院"),
        ("a Master's degree in Architecture from Tongji University", "同济大学建筑学硕士学位"),
        ("designed a riverside library", "设计了一座滨江图书馆"),
        ("the National Green Building Award", "全国绿色建筑奖"),
    ),
    (
        ("journalist", "记者"),
        ("reporter", "记者"),
        ("a national newspaper", "一家全国性报社"),
        ("a Bachelor's degree in Journalism", "新闻学学士学位"),
        ("reported a series on rural schools", "完成了一组关于乡村学校的系列报道"),
        ("the China Journalism Award", "中国新闻奖"),
    ),
    (
        ("chef", "厨师"),
        ("head chef", "主厨"),
        ("a Sichuan restaurant in Chengdu", "成都的一家川菜馆"),
        ("a diploma from a culinary school", "烹饪学校文凭"),
        ("created a signature mapo tofu recipe", "创制了一道招牌麻婆豆腐"),
        ("the Golden Chef Award", "金厨奖"),
    ),
    (
        ("chemical engineer", "化学工程师"),
        ("engineer", "工程师"),
        ("a pharmaceutical company", "一家制药公司"),
        ("a Master's degree in Chemical Engineering", "化学工程硕士学位"),
        ("improved a vaccine production process", "改进了一条疫苗生产工艺"),
        ("the Industry Technology Progress Prize", "行业科技进步奖"),
    ),
    (
        ("photographer", "摄影师"),
        ("photographer", "摄影师"),
        ("a photography studio in Hangzhou", "杭州的一家摄影工作室"),
        ("a Bachelor's degree in Fine Arts", "美术学学士学位"),
        ("held a solo exhibition of landscape photos", "举办了一场风光摄影个展"),
        ("the Golden Lens Award", "金镜头奖"),
    ),
    (
        ("lawyer", "律师"),
        ("attorney", "律师"),
        ("a law firm in Guangzhou", "广州的一家律师事务所"),
        ("a Master of Laws degree from Peking University", "北京大学法学硕士学位"),
        ("won a landmark consumer rights case", "赢得了一起标志性的消费者权益案件"),
        ("the Excellent Lawyer Award", "优秀律师奖"),
    ),
    (
        ("data analyst", "数据分析师"),
        ("analyst", "分析师"),
        ("an e-commerce company", "一家电商公司"),
        ("a Master's degree in Statistics", "统计学硕士学位"),
        ("built a sales forecasting model", "搭建了一个销量预测模型"),
        ("the Data Science Challenge first prize", "数据科学挑战赛一等奖"),
    ),
)

# (relationship, group); groups decide how the description reads
RELATIONSHIPS = (
    (("elder sister", "姐姐"), "family"),
    (("younger brother", "弟弟"), "family"),
    (("father", "父亲"), "family"),
    (("mother", "母亲"), "family"),
    (("cousin", "表妹"), "family"),
    (("friend", "朋友"), "friend"),
    (("college classmate", "大学同学"), "friend"),
    (("colleague", "同事"), "work"),
    (("mentor", "导师"), "work"),
    (("neighbor", "邻居"), "community"),
    (("community member", "社区成员"), "community"),
)
BONDS = {
    "family": ("They are close and often spend family time together.", "他们关系亲密，经常一起度过家庭时光。"),
    "friend": ("They met years ago and often meet up on weekends.", "他们多年前相识，周末经常见面。"),
    "work": ("They work on projects together and trust each other.", "他们一起做项目，彼此信任。"),
    "community": ("They often meet at community events.", "他们经常在社区活动中见面。"),
}
OTHER_JOBS = (
    ("nurse", "护士"),
    ("accountant", "会计"),
    ("musician", "音乐人"),
    ("sales manager", "销售经理"),
    ("university lecturer", "大学讲师"),
    ("civil servant", "公务员"),
    ("graphic designer", "平面设计师"),
    ("pharmacist", "药剂师"),
    ("police officer", "警察"),
    ("retired engineer", "退休工程师"),
)

# Events: activity (after "X and Y ..."), place, the detail sentence's question / answer / anchor.
# "{o}" is the other character's name.
EVENTS = (
    dict(
        summary=("Hiking on Mount Tai", "登泰山"),
        activity=("went hiking on {p}", "去{p}徒步"),
        base=("go hiking on {p}", "去{p}徒步"),
        place=("Mount Tai", "泰山"),
        detail=("{o} brought a thermos of ginger tea for the climb.", "{o}带了一保温壶姜茶上山。"),
        question=("What did {o} bring on the hike up Mount Tai?", "{o}登泰山时带了什么？"),
        answer=("{o} brought a thermos of ginger tea.", "{o}带了一保温壶姜茶。"),
        anchor=("a thermos of ginger tea", "一保温壶姜茶"),
    ),
    dict(
        summary=("Visiting a photography exhibition", "参观摄影展"),
        activity=("visited a photography exhibition at {p}", "在{p}参观摄影展"),
        base=("visit the photography exhibition at {p}", "在{p}参观摄影展"),
        place=("the National Art Museum", "国家美术馆"),
        detail=("{o} bought a print of a lighthouse at the gift shop.", "{o}在纪念品店买了一幅灯塔的照片。"),
        question=("What did {o} buy at the photography exhibition?", "{o}在摄影展上买了什么？"),
        answer=("{o} bought a print of a lighthouse.", "{o}买了一幅灯塔的照片。"),
        anchor=("a print of a lighthouse", "一幅灯塔的照片"),
    ),
    dict(
        summary=("Taking a dumpling-making class", "上包饺子课"),
        activity=("took a dumpling-making class at {p}", "在{p}上包饺子课"),
        base=("take a dumpling-making class at {p}", "在{p}上包饺子课"),
        place=("a cooking studio on Nanjing Road", "南京路上的一家烹饪工作室"),
        detail=("Together they made forty dumplings with pork and chives.", "他们一起包了四十个猪肉韭菜饺子。"),
        question=("How many dumplings did they make in the cooking class?", "他们在烹饪课上包了多少个饺子？"),
        answer=("They made forty dumplings.", "他们包了四十个饺子。"),
        anchor=("forty dumplings", "四十个"),
    ),
    dict(
        summary=("Attending a jazz concert", "听爵士音乐会"),
        activity=("attended a jazz concert at {p}", "在{p}听爵士音乐会"),
        base=("attend a jazz concert at {p}", "在{p}听爵士音乐会"),
        place=("the Blue Note club", "蓝调俱乐部"),
        detail=("The band played 'Autumn Leaves' as an encore.", "乐队返场演奏了《秋叶》。"),
        question=(
            "Which song did the band play as an encore at the jazz concert?",
            "爵士音乐会上乐队返场演奏了哪首歌？",
        ),
        answer=("The band played 'Autumn Leaves' as an encore.", "乐队返场演奏了《秋叶》。"),
        anchor=("Autumn Leaves", "秋叶"),
    ),
    dict(
        summary=("Volunteering at a book drive", "参加图书募捐志愿活动"),
        activity=("volunteered at a book drive in {p}", "在{p}参加图书募捐志愿活动"),
        base=("volunteer at a book drive in {p}", "在{p}参加图书募捐志愿活动"),
        place=("the community library", "社区图书馆"),
        detail=(
            "By the evening they had collected 300 books for rural schools.",
            "到傍晚他们为乡村学校募集了300本书。",
        ),
        question=("How many books did they collect at the book drive?", "图书募捐活动中他们募集了多少本书？"),
        answer=("They collected 300 books for rural schools.", "他们为乡村学校募集了300本书。"),
        anchor=("300 books", "300本书"),
    ),
    dict(
        summary=("A weekend trip to Hangzhou", "杭州周末游"),
        activity=("took a weekend trip to {p}", "去{p}周末旅行"),
        base=("take a weekend trip to {p}", "去{p}周末旅行"),
        place=("Hangzhou", "杭州"),
        detail=("The highlight was boating on West Lake at sunset.", "最难忘的是日落时在西湖上划船。"),
        question=("What was the highlight of the weekend trip to Hangzhou?", "杭州周末游最难忘的是什么？"),
        answer=("The highlight was boating on West Lake at sunset.", "最难忘的是日落时在西湖上划船。"),
        anchor=("boating on West Lake", "在西湖上划船"),
    ),
    dict(
        summary=("Playing a charity basketball game", "打慈善篮球赛"),
        activity=("played in a charity basketball game at {p}", "在{p}参加慈善篮球赛"),
        base=("play in a charity basketball game at {p}", "在{p}参加慈善篮球赛"),
        place=("the Riverside Sports Center", "滨江体育中心"),
        detail=("Their team won by six points.", "他们的队伍赢了六分。"),
        question=(
            "By how many points did their team win the charity basketball game?",
            "慈善篮球赛中他们的队伍赢了几分？",
        ),
        answer=("Their team won by six points.", "他们的队伍赢了六分。"),
        anchor=("six points", "六分"),
    ),
    dict(
        summary=("Moving to a new apartment", "搬进新公寓"),
        activity=("moved furniture into a new apartment in {p}", "搬进了{p}的新公寓"),
        base=("move furniture into a new apartment in {p}", "搬进{p}的新公寓"),
        place=("Green Garden Residence", "绿园小区"),
        detail=("{o} assembled a walnut bookshelf for the study.", "{o}为书房组装了一个胡桃木书架。"),
        question=("What did {o} assemble during the move?", "搬家时{o}组装了什么？"),
        answer=("{o} assembled a walnut bookshelf.", "{o}组装了一个胡桃木书架。"),
        anchor=("a walnut bookshelf", "一个胡桃木书架"),
    ),
    dict(
        summary=("Attending a data science workshop", "参加数据科学工作坊"),
        activity=("attended a data science workshop at {p}", "在{p}参加数据科学工作坊"),
        base=("attend a data science workshop at {p}", "在{p}参加数据科学工作坊"),
        place=("Tsinghua Science Park", "清华科技园"),
        detail=(
            "Their project on air quality won the prize for best project.",
            "他们关于空气质量的项目获得了最佳项目奖。",
        ),
        question=("What was their award-winning workshop project about?", "他们在工作坊获奖的项目是关于什么的？"),
        answer=("Their project was about air quality.", "他们的项目是关于空气质量的。"),
        anchor=("air quality", "空气质量"),
    ),
    dict(
        summary=("Celebrating a birthday", "庆祝生日"),
        activity=("celebrated a birthday at {p}", "在{p}一起庆祝生日"),
        base=("celebrate a birthday at {p}", "在{p}庆祝生日"),
        place=("a hotpot restaurant", "一家火锅店"),
        detail=("{o} received a handmade scrapbook as a gift.", "{o}收到了一本手工剪贴簿作为礼物。"),
        question=("What gift did {o} receive at the birthday celebration?", "生日聚会上{o}收到了什么礼物？"),
        answer=("{o} received a handmade scrapbook.", "{o}收到了一本手工剪贴簿。"),
        anchor=("a handmade scrapbook", "一本手工剪贴簿"),
    ),
    dict(
        summary=("Fishing at Qiandao Lake", "千岛湖钓鱼"),
        activity=("went fishing at {p}", "去{p}钓鱼"),
        base=("go fishing at {p}", "去{p}钓鱼"),
        place=("Qiandao Lake", "千岛湖"),
        detail=("{o} caught a large silver carp before noon.", "{o}中午前钓到了一条大鲢鱼。"),
        question=("What did {o} catch at Qiandao Lake?", "{o}在千岛湖钓到了什么？"),
        answer=("{o} caught a large silver carp.", "{o}钓到了一条大鲢鱼。"),
        anchor=("a large silver carp", "一条大鲢鱼"),
    ),
    dict(
        summary=("Planting trees on Arbor Day", "植树节植树"),
        activity=("planted trees on {p}", "去{p}植树"),
        base=("plant trees on {p}", "去{p}植树"),
        place=("the hills outside the city", "城郊的山坡"),
        detail=("They planted twelve ginkgo saplings.", "他们种下了十二棵银杏树苗。"),
        question=("What kind of saplings did they plant on Arbor Day?", "植树节他们种的是什么树苗？"),
        answer=("They planted ginkgo saplings.", "他们种的是银杏树苗。"),
        anchor=("ginkgo", "银杏"),
    ),
)

# what the character tells the assistant afterwards (dialogues): feeling and plan
FEELINGS = (
    ("relaxed and grateful", "放松又感恩"),
    ("proud", "自豪"),
    ("happy but tired", "开心但有点累"),
    ("inspired", "受到了启发"),
    ("nostalgic", "怀念"),
)
PLANS = (
    ("sign up for a photography course", "报名参加摄影课"),
    ("invite everyone to dinner next Friday", "下周五请大家吃饭"),
    ("write a travel blog post", "写一篇旅行博客"),
    ("start jogging every morning", "每天早上开始慢跑"),
    ("learn to make mooncakes", "学做月饼"),
    ("visit the place again in autumn", "秋天再去一次"),
    ("print the photos for a family album", "把照片洗出来做家庭相册"),
)
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
